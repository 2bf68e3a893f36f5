//! Shaped array parameters (`Array2<T>`, `DisjointArray2<T, Strided>`, `Array<T, 3>`)
//! and the `#[shapes(a[m, k], b[k, n], c[m, n])]` contract: their rules, each a spanned
//! error, and the checked form that `expand` records in the descriptor.

use oxide_abi::shape::MAX_ARRAY_RANK;
use oxide_abi::{ArrayLayout, ParamKind};
use syn::ext::IdentExt;
use syn::{Expr, GenericArgument, Ident, Lit, PathArguments, Type, TypePath};

use super::{Elem, Errors, Param, Seen, element};
use crate::parse::{ShapeDim, ShapesSyntax};

/// A shaped array parameter, checked.
#[derive(Clone)]
pub struct ArrayParam {
    pub rank: usize,
    pub layout: ArrayLayout,
    /// One per dimension: a shared name, a decimal extent, or `_`.
    pub dims: Vec<String>,
    /// Written `DisjointSlice<T, Runtime2DIndex>` (cuda-oxide's slice with a row width
    /// bound by the host): passed as a C-order 2-D output, rebuilt as that slice.
    pub row_width_slice: bool,
}

/// `Some` when `ty` names a shaped array type: its kind, element and rank/layout.
pub(super) fn classify_array(
    p: &TypePath,
    ty: &Type,
    generics: &[(&Ident, bool)],
) -> Option<Result<(ParamKind, Elem, ArrayParam), syn::Error>> {
    let last = p.path.segments.last()?;
    let name = last.ident.to_string();
    if name == "DisjointSlice" {
        return runtime_2d_slice(&last.arguments, generics);
    }
    let (kind, rest) = if let Some(r) = name.strip_prefix("DisjointArray") {
        (ParamKind::DisjointArray, r)
    } else if let Some(r) = name.strip_prefix("Array") {
        (ParamKind::Array, r)
    } else {
        return None;
    };
    let named_rank: Option<usize> = match rest {
        "" => None,
        "1" | "2" | "3" => rest.parse().ok(),
        _ => return None,
    };
    Some(array_args(kind, named_rank, &last.arguments, ty, generics))
}

/// `DisjointSlice<T, Runtime2DIndex>`: its row width is launch data, so it crosses the
/// ABI as a C-order 2-D output array (pointer, rows, row width, strides), which the
/// launcher already checks (a 2-D C-contiguous array; its second extent is the width).
/// The space is known by its name, as cuda-oxide's macro knows it: an alias of it
/// takes the plain slice's path, whose constructor requires a space without data, so
/// it fails to compile rather than pass two words for three.
fn runtime_2d_slice(
    args: &PathArguments,
    generics: &[(&Ident, bool)],
) -> Option<Result<(ParamKind, Elem, ArrayParam), syn::Error>> {
    let PathArguments::AngleBracketed(args) = args else {
        return None;
    };
    let mut types = args.args.iter().filter_map(|a| match a {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    });
    let (elem, space) = (types.next()?, types.next()?);
    let is_runtime_2d = matches!(super::strip(space), Type::Path(sp)
        if sp.path.segments.last().is_some_and(|s| s.ident == "Runtime2DIndex"));
    if !is_runtime_2d {
        return None;
    }
    Some(element(elem, generics).map(|e| {
        (
            ParamKind::DisjointArray,
            e,
            ArrayParam {
                rank: 2,
                layout: ArrayLayout::C,
                dims: vec!["_".into(); 2],
                row_width_slice: true,
            },
        )
    }))
}

fn array_args(
    kind: ParamKind,
    named_rank: Option<usize>,
    args: &PathArguments,
    ty: &Type,
    generics: &[(&Ident, bool)],
) -> Result<(ParamKind, Elem, ArrayParam), syn::Error> {
    let usage = || {
        syn::Error::new_spanned(
            ty,
            format!(
                "a shaped array is written `Array2<T>`, `Array2<T, Strided>` or \
                 `Array<T, 2, Strided>` (ranks 1 to {MAX_ARRAY_RANK}; `DisjointArray…` for \
                 outputs), where T is a scalar type or a type parameter of the kernel"
            ),
        )
    };
    let PathArguments::AngleBracketed(args) = args else {
        return Err(usage());
    };
    let mut rest = args
        .args
        .iter()
        .filter(|a| !matches!(a, GenericArgument::Lifetime(_)));
    let elem = match rest.next() {
        Some(GenericArgument::Type(t)) => element(t, generics)?,
        _ => return Err(usage()),
    };
    let mut rank = named_rank;
    if rank.is_none() {
        rank = match rest.next() {
            Some(GenericArgument::Const(Expr::Lit(l))) => match &l.lit {
                Lit::Int(i) => i.base10_parse::<usize>().ok(),
                _ => None,
            },
            _ => None,
        };
    }
    let rank = match rank {
        Some(r) if (1..=MAX_ARRAY_RANK).contains(&r) => r,
        _ => return Err(usage()),
    };
    let layout = match rest.next() {
        None => ArrayLayout::C,
        Some(GenericArgument::Type(Type::Path(l))) if l.path.is_ident("C") => ArrayLayout::C,
        Some(GenericArgument::Type(Type::Path(l))) if l.path.is_ident("Strided") => {
            ArrayLayout::Strided
        }
        Some(_) => return Err(usage()),
    };
    if rest.next().is_some() {
        return Err(usage());
    }
    Ok((
        kind,
        elem,
        ArrayParam {
            rank,
            layout,
            dims: vec!["_".into(); rank],
            row_width_slice: false,
        },
    ))
}

/// Apply `#[shapes(...)]` to the parameters: each entry names a shaped array parameter
/// and gives one dimension per axis.
pub(super) fn check_shapes(shapes: ShapesSyntax, params: &mut [Param], errors: &mut Errors) {
    let mut seen = Seen::default();
    for entry in shapes.entries {
        let name = entry.param.unraw().to_string();
        if !seen.first(
            &name,
            entry.param.span(),
            "is given twice in #[shapes]",
            errors,
        ) {
            continue;
        }
        let Some(p) = params.iter_mut().find(|p| p.ident.unraw() == name) else {
            errors.push(
                entry.param.span(),
                format!("`{name}` is not a parameter of this kernel"),
            );
            continue;
        };
        let Some(array) = p.array.as_mut() else {
            if p.kind.is_slice() {
                p.length = slice_length(&name, entry.param.span(), entry.dims, errors);
            } else {
                errors.push(
                    entry.param.span(),
                    format!(
                        "`{name}` is neither a slice nor a shaped array; #[shapes] names \
                         `&[T]`, `DisjointSlice<T>`, `&mut [T]`, `AtomicSlice<T>` and \
                         `Array2<T>`-like parameters"
                    ),
                );
            }
            continue;
        };
        if entry.dims.len() != array.rank {
            errors.push(
                entry.param.span(),
                format!(
                    "`{name}` has {} dimension(s) but #[shapes] gives {}",
                    array.rank,
                    entry.dims.len()
                ),
            );
            continue;
        }
        let mut dims = Vec::new();
        for d in entry.dims {
            dims.push(match d {
                ShapeDim::Name(i) => i.unraw().to_string(),
                ShapeDim::Any => "_".into(),
                ShapeDim::Fixed(lit) => {
                    match fixed(&lit, oxide_abi::shape::MAX_ARRAY_EXTENT, "extent", errors) {
                        Some(v) => v,
                        None => continue,
                    }
                }
            });
        }
        array.dims = dims;
    }
}

/// A slice's one dimension in `#[shapes]`: its length, a name or a number (`_` says
/// nothing, so it is refused rather than ignored).
fn slice_length(
    name: &str,
    span: proc_macro2::Span,
    dims: Vec<ShapeDim>,
    errors: &mut Errors,
) -> Option<String> {
    let mut dims = dims.into_iter();
    match (dims.next(), dims.next()) {
        (Some(ShapeDim::Name(i)), None) => Some(i.unraw().to_string()),
        (Some(ShapeDim::Fixed(lit)), None) => fixed(&lit, u64::MAX, "length", errors),
        _ => {
            errors.push(
                span,
                format!(
                    "`{name}` is a slice: #[shapes] gives it one length, a name shared \
                     with other lengths and dimensions or a number, as in `{name}[n]`"
                ),
            );
            None
        }
    }
}

/// A fixed extent or length as written, from 0 to `max`.
fn fixed(lit: &syn::LitInt, max: u64, what: &str, errors: &mut Errors) -> Option<String> {
    match lit.base10_parse::<u64>() {
        Ok(v) if v <= max => Some(v.to_string()),
        _ => {
            errors.push(
                lit.span(),
                format!("a fixed {what} is an integer from 0 to {max}"),
            );
            None
        }
    }
}
