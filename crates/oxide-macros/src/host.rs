//! The CPU emulator's entry point of a kernel instance (host targets only):
//!
//! ```c
//! int32_t __oxide_host_<entry>(const OxideLaunch *, const uint64_t *args, size_t nargs,
//!                              OxideError *);
//! ```
//!
//! It checks the number of argument words (see `oxide_abi::emu`), and hands the engine
//! in `oxide_device::__private::emu` a closure that rebuilds the parameters from the
//! words and calls the user's fn; the engine calls it once per emulated GPU thread.

use oxide_abi::names::{RESERVED_PREFIX, host_entry_symbol};
use oxide_abi::{ParamKind, ScalarType};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::{Ident, LitStr};

use crate::call::call_kernel;
use crate::validate::{Instance, Kernel};

/// The most threads a block may have without launch bounds (CUDA's limit).
const MAX_BLOCK_THREADS: u32 = oxide_abi::limits::MAX_THREADS_PER_BLOCK;

pub fn host_entry(kernel: &Kernel, inst: &Instance) -> TokenStream {
    let symbol = host_entry_symbol(&inst.entry);
    let ident = Ident::new(&symbol, Span::call_site());
    let label = LitStr::new(&inst.entry, Span::call_site());
    let private = quote!(::oxide_device::__private);
    let mut word = 0usize;
    let mut rebuild = Vec::new();
    let mut call_args = Vec::new();
    for (i, param) in kernel.params.iter().enumerate() {
        let arg = format_ident!("{}_arg{}", RESERVED_PREFIX, i);
        let ty = kernel.elem_type(param, inst);
        let t = crate::records::elem_tokens(kernel, param, inst);
        let (w0, w1) = (word, word + 1);
        let value = match param.kind {
            ParamKind::Scalar => {
                word += 1;
                scalar_from_word(ty, quote!(__oxide_words[#w0]))
            }
            ParamKind::Array | ParamKind::DisjointArray => {
                let a = param
                    .array
                    .as_ref()
                    .expect("shaped arrays carry their rank");
                let ptr = quote!(__oxide_words[#w0] as usize);
                let dims = (0..a.rank).map(|d| {
                    let w = w0 + 1 + d;
                    quote!(__oxide_words[#w] as usize)
                });
                let strides = (0..a.rank).map(|d| {
                    let w = w0 + 1 + a.rank + d;
                    quote!(__oxide_words[#w] as usize)
                });
                word += 1 + 2 * a.rank;
                let build = array_ctor(param.kind, a, &t);
                let ptr = if param.kind == ParamKind::Array {
                    quote!(#ptr as *const #t)
                } else {
                    quote!(#ptr as *mut #t)
                };
                quote!(unsafe { #build(#ptr, [#(#dims),*], [#(#strides),*]) })
            }
            ParamKind::Value => {
                // The word is the address of the value's bytes (any alignment).
                word += 1;
                quote!(unsafe {
                    ::core::ptr::read_unaligned(__oxide_words[#w0] as usize as *const #t)
                })
            }
            ParamKind::Pointer => {
                word += 1;
                if param.mutable {
                    quote!(__oxide_words[#w0] as usize as *mut #t)
                } else {
                    quote!(__oxide_words[#w0] as usize as *const #t)
                }
            }
            kind => {
                word += 2;
                let ptr = quote!(__oxide_words[#w0] as usize);
                let len = quote!(__oxide_words[#w1] as usize);
                match kind {
                    ParamKind::Slice => {
                        quote!(unsafe { #private::slice::<#t>(#ptr as *const #t, #len) })
                    }
                    ParamKind::DisjointSlice => {
                        quote!(unsafe { #private::disjoint::<#t, _>(#ptr as *mut #t, #len) })
                    }
                    ParamKind::AtomicSlice => {
                        quote!(unsafe { #private::atomic_slice::<#t>(#ptr as *mut #t, #len) })
                    }
                    _ => quote!(unsafe { #private::slice_mut::<#t>(#ptr as *mut #t, #len) }),
                }
            }
        };
        rebuild.push(quote!(let #arg = #value;));
        call_args.push(arg);
    }
    let words = word;
    let max_threads = kernel
        .launch_bounds
        .map_or(MAX_BLOCK_THREADS, |b| b.max_threads.min(MAX_BLOCK_THREADS));
    let call = call_kernel(kernel, inst, &call_args);
    quote! {
        #[cfg(not(target_arch = "nvptx64"))]
        #[doc(hidden)]
        #[allow(unsafe_code, unused_unsafe, non_snake_case, clippy::missing_safety_doc)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn #ident(
            launch: *const #private::emu::OxideLaunch,
            args: *const u64,
            nargs: usize,
            error: *mut #private::emu::OxideError,
        ) -> i32 {
            // SAFETY: the caller passes `nargs` words at `args`, and valid buffers.
            let __oxide_words: &[u64] =
                match unsafe { #private::emu::words(#label, args, nargs, #words, error) } {
                    Ok(w) => w,
                    Err(status) => return status,
                };
            // SAFETY: as above; the buffers outlive the launch.
            unsafe {
                #private::emu::launch(launch, error, #max_threads, &|| {
                    #(#rebuild)*
                    #call;
                })
            }
        }
    }
}

/// The `__private` function that rebuilds a shaped array parameter, with its type
/// arguments (shared by the device and host entries).
pub fn array_ctor(
    kind: ParamKind,
    a: &crate::validate::ArrayParam,
    t: &TokenStream,
) -> TokenStream {
    let rank = a.rank;
    let layout = Ident::new(a.layout.rust_name(), Span::call_site());
    if a.row_width_slice {
        return quote!(::oxide_device::__private::runtime_2d_slice::<#t>);
    }
    let f = if kind == ParamKind::Array {
        quote!(array)
    } else {
        quote!(disjoint_array)
    };
    quote!(::oxide_device::__private::#f::<#t, #rank, ::oxide_device::array::#layout>)
}

/// A scalar parameter from its widened 64-bit word.
fn scalar_from_word(ty: ScalarType, w: TokenStream) -> TokenStream {
    match ty {
        ScalarType::Bool => quote!(#w != 0),
        ScalarType::F32 => quote!(f32::from_bits(#w as u32)),
        ScalarType::F64 => quote!(f64::from_bits(#w)),
        ScalarType::F16 => quote!(::oxide_device::f16::from_bits(#w as u16)),
        ScalarType::Bf16 => quote!(::oxide_device::bf16::from_bits(#w as u16)),
        other => {
            let t = Ident::new(other.rust_name(), Span::call_site());
            quote!(#w as #t)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::assert_entry_contains;

    #[test]
    fn host_entry_decodes_words_per_kind() {
        assert_entry_contains(
            host_entry,
            quote!(
                pub fn k(b: bool, a: f32, x: &[f32], mut y: DisjointSlice<f32>) {}
            ),
            &[
                "fn __oxide_host_k",
                "no_mangle",
                "__oxide_words [0usize] != 0",
                "f32 :: from_bits (__oxide_words [1usize] as u32)",
                "__oxide_words [3usize] as usize",
                "words (\"k\" , args , nargs , 6usize , error)",
                "1024u32",
            ],
        );
    }
}
