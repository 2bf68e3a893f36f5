//! Code generation. For each instance of a checked kernel:
//! - a descriptor static, on every target, in the descriptor section;
//! - on the host, a compile-time check that the instance satisfies the kernel's bounds;
//! - on nvptx64, the device entry point: an `extern "C"` fn exported under the entry
//!   symbol that rebuilds each argument from the launch ABI and calls the user's fn.
//!
//! The user's function itself is emitted as written (but for the link section of its
//! `SharedArray` statics, see `shared.rs`), so it stays callable (and testable) from
//! ordinary Rust.

use oxide_abi::descriptor::{
    GenericArg, KernelDescriptor, LaunchPolicy, ParamDescriptor, SourceLocation,
};
use oxide_abi::names::{
    DESCRIPTOR_ITEM_PREFIX, DESCRIPTOR_SECTION, DEVICE_WRAPPER_PREFIX, RESERVED_PREFIX,
};
use oxide_abi::{DESCRIPTOR_VERSION, ParamKind, ScalarType};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::{Ident, LitStr};

use crate::call::{call_kernel, turbofish};
use crate::validate::{Instance, Kernel, LaunchKind, PerThread, resolve_cluster, resolve_tile};

pub fn expand(kernel: &Kernel) -> TokenStream {
    let mut func = kernel.func.clone();
    crate::shared::place_shared_statics(&mut func);
    crate::compat::bring_float_methods(&mut func);
    let instances = kernel.instances.iter().map(|inst| {
        let descriptor = descriptor_static(kernel, inst);
        let check = instance_check(kernel, inst);
        let copy = crate::records::copy_checks(kernel, inst);
        let device = device_entry(kernel, inst);
        let host = crate::host::host_entry(kernel, inst);
        quote! { #descriptor #check #copy #device #host }
    });
    quote! {
        #func
        #(#instances)*
    }
}

/// `#[used] pub static __oxide_descriptor_<entry>: [u8; N]` holding the descriptor JSON.
/// `#[used]` keeps it through rustc's dead-code elimination, so it reaches the link
/// step (device) and the binary (host).
fn descriptor_static(kernel: &Kernel, inst: &Instance) -> TokenStream {
    let ident = format_ident!("{}{}", DESCRIPTOR_ITEM_PREFIX, inst.entry);
    let section = LitStr::new(DESCRIPTOR_SECTION, Span::call_site());
    let (head, numbers) = crate::records::patch_json(&descriptor_head(kernel, inst), kernel, inst);
    let [head, to_file, to_line, tail] = source_template(&head);
    // With the kernel name's span, `line!()` is the line of the `fn`, not of `#[kernel]`.
    let json = quote_spanned! {kernel.func.sig.ident.span()=>
        ::core::concat!(
            #head, ::core::module_path!(), #to_file, ::core::file!(), #to_line,
            ::core::line!(), #tail
        )
    };
    let bytes = if numbers.is_empty() {
        quote!(::oxide_device::__private::descriptor_bytes(#json))
    } else {
        quote!(::oxide_device::__private::descriptor_bytes_with(#json, &[#(#numbers),*]))
    };
    quote! {
        #[used]
        #[unsafe(link_section = #section)]
        #[doc(hidden)]
        #[allow(non_upper_case_globals, unsafe_code)]
        pub static #ident: [u8; {
            const JSON: &str = #json;
            JSON.len()
        }] = #bytes;
    }
}

/// The descriptor as JSON, less its `source` and its closing brace.
fn descriptor_head(kernel: &Kernel, inst: &Instance) -> String {
    let descriptor = KernelDescriptor {
        version: DESCRIPTOR_VERSION,
        name: kernel.name.clone(),
        entry: inst.entry.clone(),
        instance: inst
            .args
            .iter()
            .map(|a| GenericArg {
                param: a.param.unraw().to_string(),
                value: a.text.clone(),
            })
            .collect(),
        params: kernel
            .params
            .iter()
            .map(|p| ParamDescriptor {
                name: p.ident.unraw().to_string(),
                kind: p.kind,
                ty: kernel.elem_type(p, inst),
                mutable: p.mutable,
                array: p.array.as_ref().map(|a| oxide_abi::shape::ArrayShape {
                    layout: a.layout,
                    dims: a.dims.clone(),
                }),
                length: p.length.clone(),
                record: crate::records::layout(p, inst),
            })
            .collect(),
        is_unsafe: kernel.is_unsafe,
        launch_bounds: kernel.launch_bounds,
        cluster: kernel
            .cluster
            .as_ref()
            .and_then(|c| resolve_cluster(c, inst)),
        launch: launch_policy(kernel, inst),
        variant_of: kernel.variant_of.clone(),
        shared_bytes: kernel.launch.as_ref().and_then(|l| l.shared),
        tensor_maps: kernel.tensor_maps.as_ref().map(|t| t.resolve(inst)),
        tune: kernel.tune.clone(),
        dependent_launch: kernel.dependent_launch,
        whole_warps: None,
        source: SourceLocation {
            module: String::new(),
            file: String::new(),
            line: 0,
        },
    };
    let mut value = serde_json::to_value(&descriptor).expect("a descriptor serializes");
    let object = value
        .as_object_mut()
        .expect("a descriptor is a JSON object");
    object
        .remove(SOURCE_KEY)
        .expect("descriptors have a source");
    let json = value.to_string();
    json.strip_suffix('}').expect("a JSON object").to_string()
}

/// The `#[launch]` policy of one instance (`per_thread = vector` depends on the type).
fn launch_policy(kernel: &Kernel, inst: &Instance) -> Option<LaunchPolicy> {
    let l = kernel.launch.as_ref()?;
    let name = |i: usize| kernel.params[i].ident.unraw().to_string();
    let over = name(l.over);
    let per_thread = match l.per_thread {
        PerThread::Elements(n) => n,
        PerThread::Vector => {
            let size = kernel.elem_type(&kernel.params[l.over], inst).size() as u32;
            (16 / size).max(1)
        }
    };
    let block = l.block;
    // tiles, persistent_tiles: the block, and this instance's tile.
    let tiles = l.tiles.as_ref().map(|(b, t)| (*b, resolve_tile(t, inst)));
    Some(match l.kind {
        LaunchKind::Elementwise => LaunchPolicy::Elementwise {
            over,
            per_thread,
            block,
        },
        LaunchKind::GridStride => LaunchPolicy::GridStride {
            over,
            per_thread,
            block,
            blocks_per_sm: l.blocks_per_sm,
        },
        LaunchKind::BlockPerElement => LaunchPolicy::BlockPerElement { over, block },
        LaunchKind::BlockPerRow => LaunchPolicy::BlockPerRow {
            over,
            cols: l.cols.map(name),
            block,
            blocks_per_sm: l.blocks_per_sm,
        },
        LaunchKind::Segments => LaunchPolicy::Segments { over },
        LaunchKind::Columns => {
            let size = kernel.elem_type(&kernel.params[l.over], inst).size() as u32;
            LaunchPolicy::Columns {
                over,
                per_block: (oxide_abi::descriptor::COLUMN_STRIP_BYTES / size.max(1)).max(1),
                block,
            }
        }
        LaunchKind::Tiles => {
            let (block, tile) = tiles.expect("validated");
            LaunchPolicy::Tiles { over, block, tile }
        }
        LaunchKind::PersistentTiles => {
            let (block, tile) = tiles.expect("validated");
            LaunchPolicy::PersistentTiles {
                over,
                block,
                tile,
                blocks_per_sm: l.blocks_per_sm,
            }
        }
    })
}

/// JSON keys of `KernelDescriptor::source` (a unit test decodes the result, so a
/// renamed field fails there).
const SOURCE_KEY: &str = "source";

/// The pieces around `module_path!()`, `file!()` and `line!()`: the source location is
/// known only to the compiler at the expansion site, so `concat!` completes the JSON.
/// A path holding `"` or `\` (Windows) would need escaping that `concat!` cannot do;
/// pyoxide builds on Linux.
fn source_template(head: &str) -> [String; 4] {
    [
        format!("{head},\"{SOURCE_KEY}\":{{\"module\":\""),
        "\",\"file\":\"".to_string(),
        "\",\"line\":".to_string(),
        "}}".to_string(),
    ]
}

/// Host-side check that each instance is well-formed (bounds hold), so a bad instance
/// fails `cargo check`/`cargo test` and not only the device build.
fn instance_check(kernel: &Kernel, inst: &Instance) -> TokenStream {
    if inst.args.is_empty() {
        return TokenStream::new();
    }
    let name = &kernel.func.sig.ident;
    let turbofish = turbofish(inst);
    quote! {
        #[cfg(not(target_arch = "nvptx64"))]
        const _: () = {
            let _ = #name #turbofish;
        };
    }
}

/// The GPU entry point. A plain `extern "C"` fn: the link step gives every entry named
/// in a descriptor LLVM's `ptx_kernel` calling convention, so kernel crates need no
/// `abi_ptx` feature.
fn device_entry(kernel: &Kernel, inst: &Instance) -> TokenStream {
    let wrapper = format_ident!("{}{}", DEVICE_WRAPPER_PREFIX, inst.entry);
    let entry = LitStr::new(&inst.entry, Span::call_site());
    let mut abi_params = Vec::new();
    let mut rebuild = Vec::new();
    let mut call_args = Vec::new();
    for (i, param) in kernel.params.iter().enumerate() {
        let arg = format_ident!("{}_arg{}", RESERVED_PREFIX, i);
        let len = format_ident!("{}_arg{}_len", RESERVED_PREFIX, i);
        let ty = kernel.elem_type(param, inst);
        let t = crate::records::elem_tokens(kernel, param, inst);
        let private = quote!(::oxide_device::__private);
        match param.kind {
            ParamKind::Value => abi_params.push(quote!(#arg: #t)),
            ParamKind::Scalar => {
                let abi = scalar_ident(abi_scalar(ty));
                abi_params.push(quote!(#arg: #abi));
                let value = match ty {
                    ScalarType::Bool => quote!(#arg != 0),
                    ScalarType::Usize => quote!(#arg as usize),
                    ScalarType::Isize => quote!(#arg as isize),
                    ScalarType::F16 => quote!(::oxide_device::f16::from_bits(#arg)),
                    ScalarType::Bf16 => quote!(::oxide_device::bf16::from_bits(#arg)),
                    _ => quote!(#arg),
                };
                rebuild.push(quote!(let #arg: #t = #value;));
            }
            ParamKind::Slice => {
                abi_params.push(quote!(#arg: *const #t, #len: usize));
                rebuild.push(quote!(let #arg = unsafe { #private::slice::<#t>(#arg, #len) };));
            }
            ParamKind::DisjointSlice => {
                abi_params.push(quote!(#arg: *mut #t, #len: usize));
                rebuild
                    .push(quote!(let #arg = unsafe { #private::disjoint::<#t, _>(#arg, #len) };));
            }
            ParamKind::AtomicSlice => {
                abi_params.push(quote!(#arg: *mut #t, #len: usize));
                rebuild
                    .push(quote!(let #arg = unsafe { #private::atomic_slice::<#t>(#arg, #len) };));
            }
            ParamKind::MutSlice => {
                abi_params.push(quote!(#arg: *mut #t, #len: usize));
                rebuild.push(quote!(let #arg = unsafe { #private::slice_mut::<#t>(#arg, #len) };));
            }
            ParamKind::Pointer if param.mutable => abi_params.push(quote!(#arg: *mut #t)),
            ParamKind::Pointer => abi_params.push(quote!(#arg: *const #t)),
            ParamKind::Array | ParamKind::DisjointArray => {
                let a = param
                    .array
                    .as_ref()
                    .expect("shaped arrays carry their rank");
                let dims: Vec<Ident> = (0..a.rank)
                    .map(|d| format_ident!("{}_arg{}_d{}", RESERVED_PREFIX, i, d))
                    .collect();
                let strides: Vec<Ident> = (0..a.rank)
                    .map(|d| format_ident!("{}_arg{}_s{}", RESERVED_PREFIX, i, d))
                    .collect();
                let ptr = if param.kind == ParamKind::Array {
                    quote!(*const #t)
                } else {
                    quote!(*mut #t)
                };
                abi_params.push(quote!(#arg: #ptr #(, #dims: usize)* #(, #strides: usize)*));
                let build = crate::host::array_ctor(param.kind, a, &t);
                rebuild.push(quote!(
                    let #arg = unsafe { #build(#arg, [#(#dims),*], [#(#strides),*]) };
                ));
            }
        }
        call_args.push(arg);
    }
    let assumptions = entry_assumptions(kernel, inst);
    let call = call_kernel(kernel, inst, &call_args);
    quote! {
        #[cfg(target_arch = "nvptx64")]
        #[doc(hidden)]
        #[allow(unsafe_code, improper_ctypes_definitions)]
        #[unsafe(export_name = #entry)]
        unsafe extern "C" fn #wrapper(#(#abi_params),*) {
            #assumptions
            #(#rebuild)*
            #call;
        }
    }
}

/// What the launcher checked before launch, told to the optimizer at the entry: a 1-D
/// launch for a policy other than `tiles`, each shaped array's extents at most
/// `MAX_ARRAY_EXTENT` (so 32-bit column arithmetic needs no check), and the lengths
/// and extents `#[shapes(x[rows, cols], w[cols], out[rows, cols])]` names (each
/// length or extent of a name equals the first one; a number is that length). Bounds
/// checks on `x[i]` then fold into `out.get_mut(idx)`'s, `x.row_slice(r)`'s into
/// `out.block_row_mut()`'s, and `index_1d()`'s into none.
fn entry_assumptions(kernel: &Kernel, inst: &Instance) -> TokenStream {
    let private = quote!(::oxide_device::__private);
    let mut out = TokenStream::new();
    if launch_policy(kernel, inst).is_some_and(|p| p.is_one_d()) {
        out.extend(quote!(unsafe { #private::assume_one_d_launch() };));
    }
    let mut first: Vec<(String, Ident)> = Vec::new();
    let mut assume = |name: &str, word: Ident, out: &mut TokenStream| {
        let other = if let Ok(n) = name.parse::<u64>() {
            let n = proc_macro2::Literal::u64_unsuffixed(n);
            quote!(#n)
        } else if let Some((_, f)) = first.iter().find(|(known, _)| *known == name) {
            quote!(#f)
        } else {
            first.push((name.to_string(), word));
            return;
        };
        out.extend(quote!(unsafe { #private::assume_equal(#word, #other) };));
    };
    for (i, p) in kernel.params.iter().enumerate() {
        if let Some(a) = &p.array {
            let extent = proc_macro2::Literal::u64_unsuffixed(oxide_abi::shape::MAX_ARRAY_EXTENT);
            for (d, name) in a.dims.iter().enumerate() {
                let word = format_ident!("{}_arg{}_d{}", RESERVED_PREFIX, i, d);
                out.extend(quote!(unsafe { #private::assume_at_most(#word, #extent) };));
                if name != "_" {
                    assume(name, word, &mut out);
                }
            }
        } else if let Some(length) = p.length.as_deref() {
            assume(
                length,
                format_ident!("{}_arg{}_len", RESERVED_PREFIX, i),
                &mut out,
            );
        }
    }
    out
}

/// How a scalar crosses the launch ABI: `bool` as a byte (PTX has no boolean
/// parameter), `usize`/`isize` as their 64-bit selves, `f16`/`bf16` as their bits (a
/// `.b16`, as CUDA C++ passes `__half`), everything else as itself.
fn abi_scalar(ty: ScalarType) -> ScalarType {
    match ty {
        ScalarType::Bool => ScalarType::U8,
        ScalarType::F16 | ScalarType::Bf16 => ScalarType::U16,
        ScalarType::Usize => ScalarType::U64,
        ScalarType::Isize => ScalarType::I64,
        other => other,
    }
}

fn scalar_ident(ty: ScalarType) -> Ident {
    Ident::new(ty.rust_name(), Span::call_site())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{assert_contains_all, assert_entry_contains, entry_code, kernel};
    use oxide_abi::descriptor::LaunchBounds;

    /// What `concat!` produces, given a module, file and line.
    fn complete(kernel: &Kernel, inst: &Instance, module: &str, file: &str, line: u32) -> String {
        let [head, to_file, to_line, tail] = source_template(&descriptor_head(kernel, inst));
        format!("{head}{module}{to_file}{file}{to_line}{line}{tail}")
    }

    #[test]
    fn descriptor_decodes() {
        let k = kernel(
            quote!(),
            quote! {
                #[launch_bounds(128)]
                pub unsafe fn k(n: usize, flag: bool, x: &[f64], mut y: DisjointSlice<'_, i32>,
                                z: &mut [u8], p: *const u16, q: *mut isize) {}
            },
        );
        let json = complete(&k, &k.instances[0], "my_crate::m", "src/lib.rs", 42);
        let d = KernelDescriptor::decode(json.as_bytes()).unwrap();
        let p = ParamDescriptor::new;
        use ParamKind::*;
        assert_eq!(
            d,
            KernelDescriptor {
                is_unsafe: true,
                launch_bounds: Some(LaunchBounds {
                    max_threads: 128,
                    min_blocks: None
                }),
                ..KernelDescriptor::new(
                    "k",
                    vec![
                        p("n", Scalar, ScalarType::Usize, false),
                        p("flag", Scalar, ScalarType::Bool, false),
                        p("x", Slice, ScalarType::F64, false),
                        p("y", DisjointSlice, ScalarType::I32, true),
                        p("z", MutSlice, ScalarType::U8, true),
                        p("p", Pointer, ScalarType::U16, false),
                        p("q", Pointer, ScalarType::Isize, true),
                    ],
                    SourceLocation {
                        module: "my_crate::m".into(),
                        file: "src/lib.rs".into(),
                        line: 42
                    },
                )
            }
        );
    }

    #[test]
    fn generic_instances_get_their_own_entries_and_types() {
        let k = kernel(
            quote!((f32, 4), (u8, -1)),
            quote!(
                fn tile<'a, T: Copy, const N: i32>(x: &'a [T], s: T) {}
            ),
        );
        let entries: Vec<_> = k.instances.iter().map(|i| i.entry.as_str()).collect();
        assert_eq!(entries, ["tile_f32_4", "tile_u8_m1"]);
        let d = KernelDescriptor::decode(complete(&k, &k.instances[1], "m", "f", 1).as_bytes())
            .unwrap();
        assert_eq!(
            d.instance[1],
            GenericArg {
                param: "N".into(),
                value: "-1".into()
            }
        );
        assert_eq!(
            (d.params[0].ty, d.params[1].ty),
            (ScalarType::U8, ScalarType::U8)
        );
    }

    #[test]
    fn launch_policies_resolve_per_instance() {
        let k = kernel(
            quote!(f32, f64),
            quote! {
                #[launch(elementwise(out, per_thread = vector, block = 128))]
                pub fn s<T: Copy>(x: &[T], mut out: DisjointSlice<T>) {}
            },
        );
        let policy = |i: usize| {
            let json = complete(&k, &k.instances[i], "m", "f", 1);
            KernelDescriptor::decode(json.as_bytes()).unwrap().launch
        };
        let expect = |per_thread| {
            Some(LaunchPolicy::Elementwise {
                over: "out".into(),
                per_thread,
                block: 128,
            })
        };
        assert_eq!((policy(0), policy(1)), (expect(4), expect(2)));
        let rows = kernel(
            quote!(),
            quote! {
                #[launch(block_per_row(out, cols = n))]
                #[launch_bounds(512)]
                pub fn r(x: &[f32], mut out: DisjointSlice<f32>, n: u32) {}
            },
        );
        let json = complete(&rows, &rows.instances[0], "m", "f", 1);
        assert_eq!(
            KernelDescriptor::decode(json.as_bytes()).unwrap().launch,
            Some(LaunchPolicy::BlockPerRow {
                over: "out".into(),
                cols: Some("n".into()),
                block: 256,
                blocks_per_sm: 0,
            })
        );
    }

    #[test]
    fn entry_abi_per_kind() {
        assert_entry_contains(
            device_entry,
            quote!(
                pub fn k(b: bool, n: usize, x: &[f32], mut y: DisjointSlice<f32>) {}
            ),
            &[
                "__oxide_arg0 : u8",
                "__oxide_arg1 : u64",
                "__oxide_arg2 : * const f32 , __oxide_arg2_len : usize",
                "__oxide_arg3 : * mut f32 , __oxide_arg3_len : usize",
                "let __oxide_arg0 : bool = __oxide_arg0 != 0",
                "export_name = \"k\"",
                "k (__oxide_arg0 , __oxide_arg1 , __oxide_arg2 , __oxide_arg3)",
            ],
        );
    }

    #[test]
    fn contracts_reach_the_descriptor_and_the_entry() {
        let k = kernel(
            quote!(),
            quote! {
                #[shapes(x[n], y[n], out[n], w[4])]
                #[launch(elementwise(out))]
                pub fn k(a: f32, x: &[f32], y: &[f32], mut out: DisjointSlice<f32>, w: &[f32]) {}
            },
        );
        let json = complete(&k, &k.instances[0], "m", "f", 1);
        let d = KernelDescriptor::decode(json.as_bytes()).unwrap();
        let lengths: Vec<_> = d.params.iter().map(|p| p.length.as_deref()).collect();
        assert_eq!(lengths, [None, Some("n"), Some("n"), Some("n"), Some("4")]);
        let code = device_entry(&k, &k.instances[0]).to_string();
        assert_contains_all(
            &code,
            &[
                "assume_one_d_launch ()",
                "assume_equal (__oxide_arg2_len , __oxide_arg1_len)",
                "assume_equal (__oxide_arg3_len , __oxide_arg1_len)",
                "assume_equal (__oxide_arg4_len , 4)",
            ],
        );
        // Every policy but tiles is 1-D (block_per_element too); no contract, no policy:
        // nothing assumed.
        let code = entry_code(
            device_entry,
            quote! {
                #[launch(block_per_element(out))]
                pub fn p(x: &[f32], mut out: DisjointSlice<f32>) {}
            },
        );
        assert!(code.contains("assume_one_d_launch ()") && !code.contains("assume_equal"));
        let plain = entry_code(
            device_entry,
            quote! {
                pub fn p(x: &[f32], mut out: DisjointSlice<f32>) {}
            },
        );
        assert!(!plain.contains("assume"));
    }

    #[test]
    fn array_extents_are_bounded_and_named_ones_equal() {
        let code = assert_entry_contains(
            device_entry,
            quote! {
                #[shapes(x[rows, cols], w[cols], out[rows, cols])]
                pub fn k(x: Array2<f32>, w: &[f32], mut out: DisjointArray2<f32>, y: Array1<f32>) {}
            },
            &[
                "assume_at_most (__oxide_arg0_d0 , 2147483647)",
                "assume_at_most (__oxide_arg0_d1 , 2147483647)",
                "assume_equal (__oxide_arg1_len , __oxide_arg0_d1)",
                "assume_equal (__oxide_arg2_d0 , __oxide_arg0_d0)",
                "assume_equal (__oxide_arg2_d1 , __oxide_arg0_d1)",
                "assume_at_most (__oxide_arg3_d0 , 2147483647)",
            ],
        );
        assert!(!code.contains("__oxide_arg3_d0 , __oxide"), "y[_] is free");
    }

    #[test]
    fn generated_names_use_the_abi_constants() {
        let k = kernel(
            quote!(f64),
            quote!(
                fn scale<T>(x: T) {}
            ),
        );
        let code = expand(&k).to_string();
        assert!(code.contains(&format!("{DESCRIPTOR_ITEM_PREFIX}scale_f64")));
        assert!(code.contains(&format!("{DEVICE_WRAPPER_PREFIX}scale_f64")));
        assert!(code.contains(&format!("link_section = \"{DESCRIPTOR_SECTION}\"")));
        assert!(code.contains("scale :: < f64 >"));
    }
}
