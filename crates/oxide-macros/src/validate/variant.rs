//! `#[variant_of(kernel)]` and `#[tensor_maps(...)]`: their rules and checked forms.

use oxide_abi::ParamKind;
use oxide_abi::ScalarType;
use oxide_abi::descriptor::{TensorMap, TensorMaps};
use oxide_abi::limits::{TMA_ALIGN_BYTES, TMA_MAX_BOX};
use oxide_abi::shape::ArrayLayout;
use syn::ext::IdentExt;

use super::{Elem, Errors, Param};
use crate::parse::{TensorMapsSyntax, VariantSyntax};

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
    errors: &mut Errors,
) -> Option<TensorMaps> {
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
    let mut maps = Vec::new();
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
        for (key, lit) in &m.options {
            let value = lit.base10_parse::<u32>().ok();
            let key_name = key.to_string();
            let rule = match (key_name.as_str(), value) {
                ("rows", Some(v)) if (1..=TMA_MAX_BOX).contains(&v) => {
                    rows = Some(v);
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
            box_rows: rows,
            box_bytes: bytes,
            swizzle_bytes: swizzle,
        });
    }
    ok.then(|| TensorMaps {
        param: t.param.unraw().to_string(),
        maps,
    })
}
