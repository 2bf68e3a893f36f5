//! Kernel parameters whose type is not a scalar ("records"): `Copy` structs, enums,
//! unions, tuples and arrays `[T; N]` taken by value, and slices or pointers of them
//! (`&[Quad]`, `DisjointSlice<[f32; 7]>`, `&[DeviceAtomicU64]`), as cuda-oxide's
//! kernels take them.
//!
//! The macro sees only the type's name, not its definition, so the layout comes from
//! the compiler: the descriptor carries `size_of`/`align_of` of the type as compiled
//! for the target, written into the descriptor's bytes at compile time
//! (`__private::descriptor_bytes_with`). What Python may pass for one is decided from
//! that layout and, where the type is made of one scalar (`[f32; 7]`, `DeviceAtomicU64`,
//! `Uniform<u32>`), from that scalar (`lane_scalar`).
//!
//! ABI: a value crosses as itself (rustc's C ABI for nvptx64 passes an aggregate as one
//! parameter of its bytes, `.param .align A .b8 p[S]`); on the emulator, as the address
//! of its bytes. A slice of records is (pointer, length in elements) like any slice.

use oxide_abi::descriptor::RecordLayout;
use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::Type;

pub use crate::record_types::lane_scalar;
use crate::validate::{Elem, Instance, Kernel, Param, compact};

/// The placeholder numbers the descriptor JSON carries for a size and an alignment (a
/// u64 this large prints as 20 digits, the width of `NUMBER_SLOT`), replaced in the
/// JSON text. Two values, since the JSON's key order is serde_json's, not ours.
const UNKNOWN_SIZE: u64 = u64::MAX;
const UNKNOWN_ALIGN: u64 = u64::MAX - 1;

/// The record type of a parameter in one instance (None for scalars and generics).
pub fn record_type(param: &Param, inst: &Instance) -> Option<Type> {
    match &param.elem {
        Elem::Record(ty) => Some(inst.bind(ty)),
        _ => None,
    }
}

/// The element (or value) type's tokens in one instance: a scalar's name, or the
/// bound record type.
pub fn elem_tokens(kernel: &Kernel, param: &Param, inst: &Instance) -> TokenStream {
    match record_type(param, inst) {
        Some(ty) => ty.to_token_stream(),
        None => {
            let t = syn::Ident::new(
                kernel.elem_type(param, inst).rust_name(),
                proc_macro2::Span::call_site(),
            );
            quote!(#t)
        }
    }
}

/// The descriptor's `record` for a parameter, size and alignment left as placeholders
/// (see [`patch_json`]).
pub fn layout(param: &Param, inst: &Instance) -> Option<RecordLayout> {
    record_type(param, inst).map(|ty| layout_of(&ty))
}

/// A record's layout with placeholders for what only the compiler knows.
pub fn layout_of(ty: &Type) -> RecordLayout {
    RecordLayout {
        rust_type: compact(ty),
        size: UNKNOWN_SIZE,
        align: UNKNOWN_ALIGN,
    }
}

/// The descriptor JSON with each record's placeholder size and alignment turned into
/// the slots `descriptor_bytes_with` fills, and the numbers to fill them with, in order.
pub fn patch_json(json: &str, kernel: &Kernel, inst: &Instance) -> (String, Vec<TokenStream>) {
    let records: Vec<Type> = kernel
        .params
        .iter()
        .filter_map(|p| record_type(p, inst))
        .collect();
    patch_json_for(json, &records)
}

/// [`patch_json`] for a JSON holding the layouts of `records`, in this order.
pub fn patch_json_for(json: &str, records: &[Type]) -> (String, Vec<TokenStream>) {
    let slot = "~".repeat(20);
    let size = format!("\"size\":{UNKNOWN_SIZE}");
    let align = format!("\"align\":{UNKNOWN_ALIGN}");
    // The placeholders in the order they appear: records in parameter order, each
    // record's two keys in serde_json's order.
    let mut order: Vec<(usize, bool)> = json
        .match_indices(&size)
        .map(|(at, _)| (at, true))
        .chain(json.match_indices(&align).map(|(at, _)| (at, false)))
        .collect();
    order.sort();
    assert_eq!(
        order.len(),
        2 * records.len(),
        "two placeholders per record"
    );
    let numbers = order
        .iter()
        .enumerate()
        .map(|(k, &(_, is_size))| {
            let ty = &records[k / 2];
            if is_size {
                quote!(::core::mem::size_of::<#ty>())
            } else {
                quote!(::core::mem::align_of::<#ty>())
            }
        })
        .collect();
    let json = json
        .replace(&size, &format!("\"size\":{slot}"))
        .replace(&align, &format!("\"align\":{slot}"));
    (json, numbers)
}

/// Host-side check that a by-value record is `Copy` (what crosses the launch ABI is
/// its bytes), so a `Vec` or `&str` parameter fails with a clear trait error.
pub fn copy_checks(kernel: &Kernel, inst: &Instance) -> TokenStream {
    let checks = kernel
        .params
        .iter()
        .filter(|p| p.kind == oxide_abi::ParamKind::Value)
        .filter_map(|p| record_type(p, inst))
        .map(|ty| {
            quote! {
                #[cfg(not(target_arch = "nvptx64"))]
                const _: () = {
                    fn kernel_parameters_by_value_must_be_copy<T: ::core::marker::Copy>() {}
                    let _ = kernel_parameters_by_value_must_be_copy::<#ty>;
                };
            }
        });
    quote!(#(#checks)*)
}
