//! `#[variant_of(kernel)]` and `#[tensor_maps(...)]`: their rules and checked forms.

use oxide_abi::ParamKind;
use oxide_abi::ScalarType;
use oxide_abi::descriptor::{TensorMap, TensorMaps};
use oxide_abi::limits::{TMA_ALIGN_BYTES, TMA_MAX_BOX};
use oxide_abi::shape::ArrayLayout;
use syn::Ident;
use syn::ext::IdentExt;

use super::launch::{Extent, check_named_values, named_extent, value_in};
use super::{Elem, Errors, Instance, Param};
use crate::parse::{TensorMapsSyntax, TupleItem, VariantSyntax};

/// Swizzle spans TMA has (bytes); 0: none.
const SWIZZLES: [u32; 4] = [0, 32, 64, 128];

pub(super) fn check_variant(v: VariantSyntax, name: &str, errors: &mut Errors) -> Option<String> {
    let kernel = v.kernel.unraw().to_string();
    if kernel == name {
        errors.push(
            v.kernel.span(),
            "a kernel is not a variant of itself; name the kernel (of another crate) it stands in for",
        );
        return None;
    }
    Some(kernel)
}

pub(super) fn check_tensor_maps(
    t: TensorMapsSyntax,
    params: &[Param],
    generics: &[(&Ident, bool)],
    errors: &mut Errors,
) -> Option<KernelTensorMaps> {
    let find = |ident: &syn::Ident| params.iter().position(|p| p.ident.unraw() == ident.unraw());
    let mut ok = true;
    match find(&t.param) {
        Some(i)
            if i + 1 == params.len()
                && params[i].kind == ParamKind::Slice
                && matches!(params[i].elem, Elem::Scalar(ScalarType::U8)) => {}
        _ => {
            errors.push(
                t.param.span(),
                format!(
                    "#[tensor_maps({}, ..)]: `{}` must be the kernel's last parameter, a `&[u8]` (the launcher fills it; callers do not pass it)",
                    t.param, t.param
                ),
            );
            ok = false;
        }
    }
    if t.maps.is_empty() {
        errors.push(
            t.param.span(),
            "#[tensor_maps] lists at least one array: `a(rows = 128)`",
        );
        ok = false;
    }
    let (mut maps, mut box_rows) = (Vec::new(), Vec::new());
    for m in t.maps {
        let shaped = find(&m.array).and_then(|i| params[i].array.as_ref());
        if !shaped.is_some_and(|a| a.rank == 2 && a.layout == ArrayLayout::C) {
            errors.push(
                m.array.span(),
                format!(
                    "#[tensor_maps]: `{}` must be a C-layout 2-D array parameter (`Array2<T>` or `DisjointArray2<T>`)",
                    m.array
                ),
            );
            ok = false;
        }
        let (mut rows, mut bytes, mut swizzle) = (None, 128u32, 128u32);
        let mut rows_given = false;
        for (key, item) in &m.options {
            let key_name = key.to_string();
            let lit = match item {
                TupleItem::Int(lit) => lit,
                TupleItem::Name(name) if key_name == "rows" => {
                    rows_given = true;
                    match named_extent(name, generics) {
                        Some(extent) => rows = Some(extent),
                        None => {
                            errors.push(
                                name.span(),
                                format!(
                                    "`{name}` is not a const generic parameter of this kernel: \
                                     a box's rows are an integer or `const {name}: usize` of the kernel"
                                ),
                            );
                            ok = false;
                        }
                    }
                    continue;
                }
                TupleItem::Name(name) => {
                    errors.push(
                        name.span(),
                        format!(
                            "`{key_name}` is an integer (only `rows` may name a const generic)"
                        ),
                    );
                    ok = false;
                    continue;
                }
            };
            let value = lit.base10_parse::<u32>().ok();
            let rule = match (key_name.as_str(), value) {
                ("rows", Some(v)) if (1..=TMA_MAX_BOX).contains(&v) => {
                    rows = Some(Extent::Fixed(v));
                    None
                }
                ("bytes", Some(v)) if v >= TMA_ALIGN_BYTES && v.is_multiple_of(TMA_ALIGN_BYTES) => {
                    bytes = v;
                    None
                }
                ("swizzle", Some(v)) if SWIZZLES.contains(&v) => {
                    swizzle = v;
                    None
                }
                ("rows", _) => Some(format!(
                    "`rows` is the box's row count, from 1 to {TMA_MAX_BOX}"
                )),
                ("bytes", _) => Some(format!(
                    "`bytes` is a box row's width, a multiple of {TMA_ALIGN_BYTES} bytes"
                )),
                ("swizzle", _) => Some("`swizzle` is 0, 32, 64 or 128 (bytes)".to_string()),
                (k, _) => {
                    errors.push(
                        key.span(),
                        format!(
                            "`{k}` is not an option of a tensor map; it takes: rows, bytes, swizzle"
                        ),
                    );
                    ok = false;
                    continue;
                }
            };
            rows_given |= key_name == "rows";
            if let Some(rule) = rule {
                errors.push(lit.span(), rule);
                ok = false;
            }
        }
        let Some(rows) = rows else {
            if !rows_given {
                errors.push(
                    m.array.span(),
                    format!("the map of `{}` needs `rows = R` (the box's rows)", m.array),
                );
            }
            ok = false;
            continue;
        };
        let widest = if swizzle == 0 { TMA_MAX_BOX } else { swizzle };
        if bytes > widest {
            errors.push(
                m.array.span(),
                format!(
                    "a box row of {bytes} bytes is wider than the swizzle span ({widest} bytes)"
                ),
            );
            ok = false;
        }
        maps.push(TensorMap {
            array: m.array.unraw().to_string(),
            box_rows: match rows {
                Extent::Fixed(v) => v,
                Extent::Const { .. } => 0, // each instance's, by `KernelTensorMaps::resolve`
            },
            box_bytes: bytes,
            swizzle_bytes: swizzle,
        });
        box_rows.push(rows);
    }
    ok.then(|| KernelTensorMaps {
        maps: TensorMaps {
            param: t.param.unraw().to_string(),
            maps,
        },
        rows: box_rows,
    })
}

/// A kernel's checked `#[tensor_maps]`: the maps, and each one's box rows as written (an
/// integer or a const generic's name).
pub struct KernelTensorMaps {
    maps: TensorMaps,
    rows: Vec<Extent>,
}

impl KernelTensorMaps {
    /// The maps of one instance: each named box row count is that instance's value.
    pub fn resolve(&self, inst: &Instance) -> TensorMaps {
        let mut maps = self.maps.clone();
        for (map, rows) in maps.maps.iter_mut().zip(&self.rows) {
            map.box_rows = value_in(rows, inst, TMA_MAX_BOX)
                .expect("check_values: every instance's value is valid");
        }
        maps
    }

    /// Every instance gives each const generic a box names a row count from 1 to
    /// [`TMA_MAX_BOX`].
    pub(super) fn check_values(&self, instances: &[Instance], errors: &mut Errors) {
        check_named_values(
            &self.rows,
            instances,
            TMA_MAX_BOX,
            errors,
            |name, value, entry| {
                format!(
                    "a tensor map's `rows` names `{name}`, which is {value} in instance `{entry}`: \
                 a box's rows are an integer from 1 to {TMA_MAX_BOX}"
                )
            },
        );
    }
}
