//! `#[launch_bounds(...)]` and `#[launch(policy(...))]`: their rules and checked forms.

use oxide_abi::ParamKind;
use oxide_abi::descriptor::{DEFAULT_BLOCK, LaunchBounds, MAX_BLOCKS_PER_SM, least_blocks_per_sm};
use syn::Ident;
use syn::ext::IdentExt;

use super::{Elem, Errors, Instance, Param, Seen};
use crate::parse::{ClusterSyntax, LaunchBoundsSyntax, LaunchSyntax, LaunchValue, TupleItem};

/// A checked `#[launch(...)]`.
pub struct Launch {
    pub kind: LaunchKind,
    /// Index of the parameter that sizes the launch.
    pub over: usize,
    pub per_thread: PerThread,
    pub block: u32,
    pub blocks_per_sm: u32,
    /// Index of the integer parameter holding the row length (`block_per_row`).
    pub cols: Option<usize>,
    /// `tiles`, `persistent_tiles`: the block (x, y, z) and the extents each block
    /// covers (an extent may name a const generic parameter: each instance its own).
    pub tiles: Option<([u32; 3], [Extent; 3])>,
    /// `shared = N`: the dynamic shared memory a plain launch gives.
    pub shared: Option<u32>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum LaunchKind {
    Elementwise,
    GridStride,
    BlockPerElement,
    BlockPerRow,
    Segments,
    Columns,
    Tiles,
    PersistentTiles,
}

impl LaunchKind {
    /// Its name in `#[launch(...)]` and in the manifest.
    pub fn name(self) -> &'static str {
        LAUNCH_KINDS
            .iter()
            .find(|(_, k, _)| *k == self)
            .map(|(n, ..)| *n)
            .expect("every kind is in the table")
    }

    fn tiled(self) -> bool {
        matches!(self, LaunchKind::Tiles | LaunchKind::PersistentTiles)
    }
}

/// One extent of a `tile`: written as an integer, or the name of a const generic
/// parameter (`tile = (TILE, TILE)`), whose value each instance supplies.
#[derive(Clone)]
pub enum Extent {
    Fixed(u32),
    /// The kernel's `generic`-th type-or-const parameter, `name`.
    Const {
        generic: usize,
        name: Ident,
    },
}

/// The largest extent a `tile` may have.
pub const MAX_TILE_EXTENT: u32 = 1 << 16;

#[derive(Clone, Copy)]
pub enum PerThread {
    Elements(u32),
    /// 16 bytes of the `over` parameter's element type (per instance).
    Vector,
}

/// Threads a multiprocessor holds at once on sm_80 and sm_90 (2048). `grid_stride`'s
/// default `blocks_per_sm` fills half of them: a plain call's grid is then one wave for
/// any kernel of up to 64 registers a thread (a full SM allows 32; a grid of one and a
/// third waves leaves its last third running alone), and half an SM of threads with a
/// few 16-byte loads each in flight already keeps the memory system busy.
const THREADS_PER_SM: u32 = 2048;

/// An option every policy takes: the dynamic shared memory of a plain launch.
const SHARED: &str = "shared";

const LAUNCH_KINDS: [(&str, LaunchKind, &[&str]); 8] = [
    (
        "elementwise",
        LaunchKind::Elementwise,
        &["per_thread", "block"],
    ),
    (
        "grid_stride",
        LaunchKind::GridStride,
        &["per_thread", "block", "blocks_per_sm"],
    ),
    ("block_per_element", LaunchKind::BlockPerElement, &["block"]),
    (
        "block_per_row",
        LaunchKind::BlockPerRow,
        &["cols", "block", "blocks_per_sm"],
    ),
    ("segments", LaunchKind::Segments, &[]),
    ("columns", LaunchKind::Columns, &["block"]),
    ("tiles", LaunchKind::Tiles, &["block", "tile"]),
    (
        "persistent_tiles",
        LaunchKind::PersistentTiles,
        &["block", "tile", "blocks_per_sm"],
    ),
];

/// `(x, y[, z])`: one to three extents from 1 to `hi`, z and y 1 when left out. Each is
/// an integer, or, where `generics` is given (a `tile`), a const generic parameter's name.
fn triple(
    value: &LaunchValue,
    hi: u32,
    generics: Option<&[(&Ident, bool)]>,
    errors: &mut Errors,
) -> Option<[Extent; 3]> {
    let usage = if generics.is_some() {
        format!(
            "expected (x, y) or (x, y, z): integers from 1 to {hi}, or const generic parameters of the kernel"
        )
    } else {
        format!("expected (x, y) or (x, y, z), integers from 1 to {hi}")
    };
    let LaunchValue::Tuple(items, span) = value else {
        errors.push(value.span(), usage);
        return None;
    };
    if items.is_empty() || items.len() > 3 {
        errors.push(*span, usage);
        return None;
    }
    let mut out = [Extent::Fixed(1), Extent::Fixed(1), Extent::Fixed(1)];
    for (o, item) in out.iter_mut().zip(items) {
        match item {
            TupleItem::Int(lit) => match lit.base10_parse::<u32>() {
                Ok(v) if (1..=hi).contains(&v) => *o = Extent::Fixed(v),
                _ => {
                    errors.push(lit.span(), usage);
                    return None;
                }
            },
            TupleItem::Name(name) => {
                let generic = generics.and_then(|g| g.iter().position(|(i, c)| *c && **i == *name));
                let Some(generic) = generic else {
                    errors.push(
                        name.span(),
                        match generics {
                            Some(_) => format!(
                                "`{name}` is not a const generic parameter of this kernel: \
                                 a tile extent is an integer or `const {name}: usize` of the kernel"
                            ),
                            None => format!(
                                "`{name}`: a block extent is an integer from 1 to {hi}; only \
                                 `tile` extents may name const generic parameters"
                            ),
                        },
                    );
                    return None;
                };
                *o = Extent::Const {
                    generic,
                    name: name.clone(),
                };
            }
        }
    }
    Some(out)
}

/// The integers of a `block = (x, y, z)` (no names there).
fn fixed(extents: [Extent; 3]) -> [u32; 3] {
    extents.map(|e| match e {
        Extent::Fixed(v) => v,
        Extent::Const { .. } => unreachable!("triple() refuses names without generics"),
    })
}

/// Every instance gives each const generic a `tile` names a value from 1 to
/// [`MAX_TILE_EXTENT`].
pub(super) fn check_tile_values(l: &Launch, instances: &[Instance], errors: &mut Errors) {
    let Some((_, tile)) = &l.tiles else { return };
    check_named_values(
        tile,
        instances,
        MAX_TILE_EXTENT,
        errors,
        |name, value, entry| {
            format!(
                "`tile` names `{name}`, which is {value} in instance `{entry}`: a tile extent is \
             an integer from 1 to {MAX_TILE_EXTENT}"
            )
        },
    );
}

/// An error at each named extent for each instance whose value of it is not an integer
/// from 1 to `max`, worded by `rule(name, value, instance)`.
pub(super) fn check_named_values<'a>(
    extents: impl IntoIterator<Item = &'a Extent>,
    instances: &[Instance],
    max: u32,
    errors: &mut Errors,
    rule: impl Fn(&Ident, &str, &str) -> String,
) {
    for extent in extents {
        let Extent::Const { generic, name } = extent else {
            continue;
        };
        for inst in instances
            .iter()
            .filter(|i| value_in(extent, i, max).is_none())
        {
            errors.push(
                name.span(),
                rule(name, &inst.args[*generic].text, &inst.entry),
            );
        }
    }
}

/// `extent` in `inst`: its integer, or the value `inst` gives the const generic it
/// names; None when that value is not an integer from 1 to `max`.
pub(super) fn value_in(extent: &Extent, inst: &Instance, max: u32) -> Option<u32> {
    match extent {
        Extent::Fixed(v) => Some(*v),
        Extent::Const { generic, .. } => inst.args[*generic]
            .text
            .parse()
            .ok()
            .filter(|v| (1..=max).contains(v)),
    }
}

/// The extent `name` stands for: the kernel's const generic parameter of that name (each
/// instance gives its value); None when the kernel has no such const generic.
pub(super) fn named_extent(name: &Ident, generics: &[(&Ident, bool)]) -> Option<Extent> {
    let generic = generics
        .iter()
        .position(|(g, is_const)| *is_const && **g == *name)?;
    Some(Extent::Const {
        generic,
        name: name.clone(),
    })
}

/// A tile's extents in `inst`: its const generics' values in place of their names.
pub fn resolve_tile(tile: &[Extent; 3], inst: &Instance) -> [u32; 3] {
    tile.each_ref().map(|e| {
        value_in(e, inst, MAX_TILE_EXTENT)
            .expect("check_tile_values: every instance's value is valid")
    })
}

pub(super) fn check_launch_bounds(
    lb: LaunchBoundsSyntax,
    errors: &mut Errors,
) -> Option<LaunchBounds> {
    let positive =
        |lit: &syn::LitInt, what: &str, errors: &mut Errors| match lit.base10_parse::<u32>() {
            Ok(0) | Err(_) => {
                errors.push(
                    lit.span(),
                    format!(
                        "launch_bounds: {what} must be an integer from 1 to {}",
                        u32::MAX
                    ),
                );
                None
            }
            Ok(v) => Some(v),
        };
    let max_threads = positive(&lb.max_threads, "max_threads", errors);
    let limit = oxide_abi::limits::MAX_THREADS_PER_BLOCK;
    let max_threads = match max_threads {
        Some(v) if v > limit => {
            errors.push(
                lb.max_threads.span(),
                format!(
                    "launch_bounds: max_threads is {v}, but a CUDA block has at most {limit} \
                     threads; ask for {limit} or fewer"
                ),
            );
            None
        }
        other => other,
    };
    let min_blocks = match &lb.min_blocks {
        Some(lit) => Some(positive(lit, "min_blocks", errors)?),
        None => None,
    };
    Some(LaunchBounds {
        max_threads: max_threads?,
        min_blocks,
    })
}

/// `#[cluster_launch(x, y, z)]`: each count at least 1, missing ones 1, and at most
/// `MAX_CLUSTER_SIZE` blocks in all (the cluster size every sm_90+ device launches). A
/// count may name a const generic parameter of the kernel (`#[cluster_launch(SPLIT)]`):
/// each instance then has its own cluster, checked by [`check_cluster_values`].
pub(super) fn check_cluster(
    c: ClusterSyntax,
    generics: &[(&Ident, bool)],
    errors: &mut Errors,
) -> Option<[Extent; 3]> {
    let limit = oxide_abi::limits::MAX_CLUSTER_SIZE;
    let mut dims = [Extent::Fixed(1), Extent::Fixed(1), Extent::Fixed(1)];
    let mut ok = true;
    for (d, item) in dims.iter_mut().zip(&c.dims) {
        match item {
            TupleItem::Int(lit) => match lit.base10_parse::<u32>() {
                Ok(v) if v >= 1 => *d = Extent::Fixed(v),
                _ => {
                    errors.push(
                        lit.span(),
                        format!(
                            "cluster_launch: each dimension must be an integer from 1 to \
                             {limit}; write 1 for an axis the cluster does not span"
                        ),
                    );
                    ok = false;
                }
            },
            TupleItem::Name(name) => match named_extent(name, generics) {
                Some(extent) => *d = extent,
                None => {
                    errors.push(
                        name.span(),
                        format!(
                            "cluster_launch: `{name}` is not a const generic parameter of \
                                 this kernel; a dimension is an integer from 1 to {limit} or \
                                 `const {name}: usize` of the kernel (each instance its own)"
                        ),
                    );
                    ok = false;
                }
            },
        }
    }
    let fixed = dims.iter().all(|d| matches!(d, Extent::Fixed(_)));
    if ok && fixed {
        let values = dims.each_ref().map(|d| extent_value(d, &[]).unwrap_or(0));
        let blocks = values.iter().map(|&d| u64::from(d)).product::<u64>();
        if blocks > u64::from(limit) {
            let items = c.dims.iter().map(|i| match i {
                TupleItem::Int(l) => quote::quote!(#l),
                TupleItem::Name(n) => quote::quote!(#n),
            });
            errors.push_spanned(
                &quote::quote!(#(#items),*),
                format!(
                    "cluster_launch: {} x {} x {} = {blocks} blocks per cluster, but a cluster \
                     that every sm_90+ GPU launches has at most {limit}; use fewer blocks per \
                     cluster (e.g. #[cluster_launch(2, 1, 1)])",
                    values[0], values[1], values[2]
                ),
            );
            ok = false;
        }
    }
    ok.then_some(dims)
}

/// An extent's value: its integer, or the text `args` gives the const generic it names,
/// where that is an integer (None otherwise).
fn extent_value(extent: &Extent, args: &[super::InstanceArg]) -> Option<u32> {
    match extent {
        Extent::Fixed(v) => Some(*v),
        Extent::Const { generic, .. } => args.get(*generic)?.text.parse().ok(),
    }
}

/// Every instance of a kernel whose `#[cluster_launch]` names const generics gives them
/// values from 1 up, and at most `MAX_CLUSTER_SIZE` blocks in all.
pub(super) fn check_cluster_values(
    cluster: &[Extent; 3],
    instances: &[Instance],
    errors: &mut Errors,
) {
    let Some((name, span)) = cluster.iter().find_map(|e| match e {
        Extent::Const { name, .. } => Some((name.to_string(), name.span())),
        Extent::Fixed(_) => None,
    }) else {
        return;
    };
    let limit = oxide_abi::limits::MAX_CLUSTER_SIZE;
    for inst in instances {
        let values = cluster.each_ref().map(|e| extent_value(e, &inst.args));
        let blocks = values
            .iter()
            .try_fold(1u64, |n, v| v.filter(|&v| v >= 1).map(|v| n * u64::from(v)));
        if blocks.is_none_or(|b| b > u64::from(limit)) {
            let shown = values.map(|v| v.map_or("?".to_string(), |v| v.to_string()));
            errors.push(
                span,
                format!(
                    "cluster_launch names `{name}`, and instance `{}` makes its cluster {} x {} \
                     x {} blocks: each dimension must be at least 1 and a cluster that every \
                     sm_90+ GPU launches has at most {limit} blocks",
                    inst.entry, shown[0], shown[1], shown[2]
                ),
            );
        }
    }
}

/// This instance's cluster, its const generics' values in place of their names (all
/// checked). A cluster that names a const generic and comes to one block is no cluster:
/// the instance launches as a kernel without `#[cluster_launch]` (so a tuned `SPLIT = 1`
/// is the plain kernel, PTX and launch alike).
pub fn resolve_cluster(cluster: &[Extent; 3], inst: &Instance) -> Option<[u32; 3]> {
    let dims = cluster
        .each_ref()
        .map(|e| extent_value(e, &inst.args).expect("check_cluster_values: every value is valid"));
    let named = cluster.iter().any(|e| matches!(e, Extent::Const { .. }));
    (!named || dims != [1, 1, 1]).then_some(dims)
}

pub(super) fn check_launch(
    l: LaunchSyntax,
    params: &[Param],
    generics: &[(&Ident, bool)],
    bounds: Option<LaunchBounds>,
    errors: &mut Errors,
) -> Option<Launch> {
    let Some(&(_, kind, keys)) = LAUNCH_KINDS.iter().find(|(n, ..)| l.kind == n) else {
        let names: Vec<&str> = LAUNCH_KINDS.iter().map(|(n, ..)| *n).collect();
        errors.push(
            l.kind.span(),
            format!(
                "unknown launch policy `{}`; expected one of: {}",
                l.kind,
                names.join(", ")
            ),
        );
        return None;
    };
    let find = |ident: &Ident| params.iter().position(|p| p.ident.unraw() == ident.unraw());
    let over = match find(&l.over) {
        Some(i) if params[i].kind.is_array() && params[i].kind != ParamKind::Pointer => Some(i),
        Some(_) => {
            errors.push(
                l.over.span(),
                format!(
                    "#[launch({}(..))] needs a slice parameter to size the launch; `{}` is not one",
                    l.kind, l.over
                ),
            );
            None
        }
        None => {
            errors.push(
                l.over.span(),
                format!("`{}` is not a parameter of this kernel", l.over),
            );
            None
        }
    };
    let most = oxide_abi::limits::MAX_THREADS_PER_BLOCK;
    let max_block = bounds.map_or(most, |b| b.max_threads.min(most));
    let (mut per_thread, mut block, mut blocks_per_sm, mut cols) = (
        PerThread::Elements(1),
        DEFAULT_BLOCK.min(max_block),
        None,
        None,
    );
    let (mut tile_block, mut tile, mut shared) = (None, None, None);
    let mut seen = Seen::default();
    for (key, value) in &l.options {
        let name = key.to_string();
        if !keys.contains(&name.as_str()) && name != SHARED {
            let allowed = [keys, &[SHARED][..]].concat().join(", ");
            errors.push(
                key.span(),
                format!(
                    "`{name}` is not an option of `{}`; it takes: {allowed}",
                    l.kind
                ),
            );
            continue;
        }
        if !seen.first(&name, key.span(), "is given twice", errors) {
            continue;
        }
        let int = |lo: u32, hi: u32, errors: &mut Errors| match value {
            LaunchValue::Int(lit) => match lit.base10_parse::<u32>() {
                Ok(v) if (lo..=hi).contains(&v) => Some(v),
                _ => {
                    errors.push(
                        lit.span(),
                        format!("`{name}` must be an integer from {lo} to {hi}"),
                    );
                    None
                }
            },
            LaunchValue::Ident(_) | LaunchValue::Tuple(..) => {
                errors.push(
                    value.span(),
                    format!("`{name}` must be an integer from {lo} to {hi}"),
                );
                None
            }
        };
        match name.as_str() {
            "per_thread" => match value {
                LaunchValue::Ident(i) if i == "vector" => per_thread = PerThread::Vector,
                LaunchValue::Ident(_) | LaunchValue::Tuple(..) => errors.push(
                    value.span(),
                    "`per_thread` is an element count or `vector` (16 bytes' worth)",
                ),
                LaunchValue::Int(_) => {
                    if let Some(n) = int(1, 1 << 16, errors) {
                        per_thread = PerThread::Elements(n);
                    }
                }
            },
            "shared" => {
                let most = oxide_abi::limits::MAX_DYNAMIC_SHARED_BYTES;
                shared = int(1, most, errors);
            }
            "block" if kind.tiled() => {
                if let Some(b) = triple(value, 1024, None, errors).map(fixed) {
                    let threads = b[0] * b[1] * b[2];
                    if threads > max_block {
                        errors.push(
                            value.span(),
                            format!("`block` has {threads} threads, more than the kernel's launch bounds ({max_block})"),
                        );
                    }
                    tile_block = Some(b);
                }
            }
            "tile" => tile = triple(value, MAX_TILE_EXTENT, Some(generics), errors),
            "block" => {
                if let Some(b) = int(1, 1024, errors) {
                    if b > max_block {
                        errors.push(
                            value.span(),
                            format!("`block = {b}` is more than the kernel's launch bounds ({max_block})"),
                        );
                    }
                    block = b;
                }
            }
            "blocks_per_sm" => {
                let least = least_blocks_per_sm(kind.name());
                blocks_per_sm = int(least, MAX_BLOCKS_PER_SM, errors)
            }
            "cols" => {
                let LaunchValue::Ident(ident) = value else {
                    errors.push(
                        value.span(),
                        "`cols` names the integer parameter that holds the row length",
                    );
                    continue;
                };
                match find(ident) {
                    Some(i) if params[i].kind == ParamKind::Scalar
                        && matches!(params[i].elem, Elem::Scalar(t) if t.is_integer()) =>
                    {
                        cols = Some(i)
                    }
                    _ => errors.push(
                        ident.span(),
                        format!("`cols = {ident}`: `{ident}` must be an integer scalar parameter of this kernel"),
                    ),
                }
            }
            _ => unreachable!("keys are checked above"),
        }
    }
    // A column reduction splits each strip's rows among the block's threads: the more,
    // the more loads in flight on a tall matrix.
    if kind == LaunchKind::Columns && !seen.contains("block") {
        block = max_block;
    }
    // A 2-D shaped `over` knows its rows; a flat slice needs the row length named.
    let rows_known = over.is_some_and(|i| params[i].array.as_ref().is_some_and(|a| a.rank == 2));
    if kind == LaunchKind::BlockPerRow && cols.is_none() && !rows_known && !seen.contains("cols") {
        errors.push(
            l.kind.span(),
            "`block_per_row` needs `cols = <integer parameter>` (or a 2-D `DisjointArray2` to size it)",
        );
    }
    let tiles = if kind.tiled() {
        let shaped_over =
            over.is_some_and(|i| params[i].array.as_ref().is_some_and(|a| a.rank >= 2));
        if over.is_some() && !shaped_over {
            errors.push(
                l.over.span(),
                format!("`{}({}, ..)` needs a 2-D or 3-D shaped array (`Array2<T>`, `DisjointArray2<T>` ...)", l.kind, l.over),
            );
        }
        match (tile_block, tile) {
            (Some(b), Some(t)) => Some((b, t)),
            // A value given but refused above has its own error.
            _ if seen.contains("block") && seen.contains("tile") => None,
            _ => {
                errors.push(
                    l.kind.span(),
                    format!("`{}` needs `block = (x, y[, z])` and `tile = (x, y[, z])` (the extents each block covers)", l.kind),
                );
                None
            }
        }
    } else {
        None
    };
    // A persistent block walks tiles: one per multiprocessor unless told otherwise; a
    // row kernel takes one block per row unless told otherwise (0).
    let default_per_sm = match kind {
        LaunchKind::PersistentTiles => 1,
        LaunchKind::BlockPerRow => 0,
        _ => (THREADS_PER_SM / 2 / block).max(1),
    };
    Some(Launch {
        kind,
        tiles,
        over: over?,
        per_thread,
        block,
        blocks_per_sm: blocks_per_sm.unwrap_or(default_per_sm),
        cols,
        shared,
    })
}
