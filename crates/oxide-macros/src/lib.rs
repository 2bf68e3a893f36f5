//! `#[kernel]`: marks a Rust function as a GPU kernel of pyoxide.
//!
//! ```rust
//! use oxide_device::prelude::*;
//!
//! #[kernel]
//! pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) { /* ... */ }
//!
//! #[kernel(f32, f64)]            // one entry point per instance: scale_f32, scale_f64
//! #[launch_bounds(256)]          // optional; read and removed by #[kernel]
//! pub fn scale<T: Copy + core::ops::Mul<Output = T>>(f: T, x: &[T], mut out: DisjointSlice<T>) { /* ... */ }
//! ```
//!
//! The stages are separate modules: `parse` (syntax), `validate` (the rules, as spanned
//! errors), `expand` (code). Names, sections and the descriptor format come from
//! `oxide_abi`.

extern crate proc_macro;

mod call;
mod compat;
mod constant;
mod expand;
mod host;
mod parse;
mod printf;
mod record_types;
mod records;
mod shared;
#[cfg(test)]
mod testing;
mod validate;

use proc_macro::TokenStream;
use quote::quote;

#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let (attr, context, host_instanced) = match compat::take_launch_context(attr.into()) {
        Ok(split) => split,
        Err(e) => return with_item(item.into(), e).into(),
    };
    let item = compat::prepare_kernel(proc_macro2::TokenStream::from(item), context);
    let result = parse::parse(attr, item.clone()).and_then(|mut input| {
        input.host_instanced = host_instanced;
        validate::validate(input)
    });
    match result {
        Ok(kernel) => expand::expand(&kernel),
        Err(error) => with_item(item, error),
    }
    .into()
}

/// Attributes that `#[kernel]` reads, each written above it: the macro only moves itself
/// below `#[kernel]` (`parse::move_below_kernel`), where `#[kernel]` finds it.
macro_rules! read_by_kernel {
    ($($(#[$m:meta])* $name:ident => $attr:ident;)*) => {$(
        $(#[$m])*
        #[proc_macro_attribute]
        pub fn $name(attr: TokenStream, item: TokenStream) -> TokenStream {
            expanded(parse::move_below_kernel(parse::$attr, attr.into(), item.into()))
        }
    )*};
}

read_by_kernel! {
    /// `#[launch_bounds(max_threads)]` or `#[launch_bounds(max_threads, min_blocks)]` on a
    /// `#[kernel]` function: the kernel is compiled for at most `max_threads` threads per
    /// block (PTX `.maxntid`) and at least `min_blocks` resident blocks per SM
    /// (`.minnctapersm`). `#[kernel]` reads it; this macro only runs when it is written
    /// above `#[kernel]`, and moves it below.
    launch_bounds => LAUNCH_BOUNDS_ATTR;
    /// `#[cluster_launch(x, y, z)]` (or `(x)`, `(x, y)`; missing axes are 1) on a `#[kernel]`
    /// function (cuda-oxide's attribute): the kernel runs in thread-block clusters of
    /// `x · y · z` blocks (at most 8; sm_90+), whose blocks are scheduled together and can
    /// read each other's shared memory (`oxide_device::cluster`). PTX `.reqnctapercluster`;
    /// recorded in the descriptor, and a launch whose grid is not a multiple of it per axis
    /// is refused before it runs. `cargo oxide build` refuses such a kernel for targets
    /// below sm_90. A count may name a const generic parameter (`#[cluster_launch(SPLIT)]`):
    /// each instance then has its own cluster, and one whose cluster comes to one block has
    /// none. `#[kernel]` reads it; this macro only runs when it is written above
    /// `#[kernel]`, and moves it below.
    cluster_launch => CLUSTER_ATTR;
    /// `#[launch(policy(param, ...))]` on a `#[kernel]` function: how a call without
    /// `[grid, block]` sizes its launch, and which explicit grids are refused. Recorded in
    /// the kernel's descriptor and applied by the Python launcher. Policies (`param` names a
    /// slice parameter of length `n`; `block = B` sets a plain call's block, 256 if absent):
    ///
    /// - `elementwise(out, per_thread = N | vector)`: each thread handles `N` contiguous
    ///   elements (`vector`: 16 bytes' worth of `out`'s type); `ceil(n / (N·B))` blocks;
    /// - `grid_stride(x, per_thread = N | vector, blocks_per_sm = K)`: a grid-stride loop
    ///   that wants the device busy: at most `K` blocks per multiprocessor (by default half
    ///   a multiprocessor's 2048 threads: one wave for kernels of up to 64 registers);
    /// - `block_per_element(partial)`: one block per element; a grid of another size is
    ///   refused;
    /// - `block_per_row(out, cols = c, blocks_per_sm = K)`: one block per row of a
    ///   row-major matrix with `c` (an integer parameter) columns; with `K` > 0 (default
    ///   0) the kernel walks rows `blockIdx.x`, `+ gridDim.x`, … and a plain call launches
    ///   at most `K` blocks per multiprocessor (short rows: no launch-bound block per row);
    /// - `columns(out)`: column reductions (`out.reduce_columns(x, …)`): one block per
    ///   strip of 128 bytes of `out`'s columns, `ceil(n / (128 / size_of element))` blocks
    ///   of 1024 threads (or the launch bounds) unless `block` says otherwise;
    /// - `segments(out)`: each block handles `blockDim.x` elements, so the caller must give
    ///   the block; the grid follows from it.
    ///
    /// Launches of every policy but `tiles` are 1-D: the launcher refuses a grid or block
    /// with a y or z extent other than 1, and the kernel's entry assumes a 1-D launch, so
    /// `thread::index_1d()` need not check it and `thread::block_index()` is `blockIdx.x`.
    launch => LAUNCH_ATTR;
    /// `#[shapes(a[m, k], b[k, n], c[m, n])]` on a `#[kernel]` function: the dimensions of
    /// its shaped array parameters (`Array2<T>`, `DisjointArray2<T>` …). A name shared by
    /// several dimensions must have one extent in a call; a number is a fixed extent; `_`
    /// any. A slice parameter (`&[T]`, `DisjointSlice<T>`, `&mut [T]`, `AtomicSlice<T>`)
    /// takes one length, a name or a number: `#[shapes(x[n], y[n], out[n])]`. Recorded in
    /// the descriptor and checked by the launcher before launch, with errors that name the
    /// kernel, the parameter and the dimension; the kernel's entry then assumes the slice
    /// lengths (`x.len() == out.len()`), so a bounds check on one slice covers the others.
    shapes => SHAPES_ATTR;
    /// `#[variant_of(kernel)]` on a `#[kernel]` function: this kernel is a faster variant of
    /// the kernel `kernel` of another crate for the calls it takes (the same parameters a
    /// caller passes; its own shape contract, launch policy and architecture decide which
    /// calls). Recorded in the descriptor; pyoxide runs it for a plain call of `kernel` where
    /// it takes the arguments and its code runs on the device, and `kernel` everywhere else.
    variant_of => VARIANT_ATTR;
    /// `#[tensor_maps(maps, a(rows = 128), b(rows = 64), ...)]` on a `#[kernel]` function:
    /// the kernel reads or writes the listed 2-D arrays through TMA tensor maps, which the
    /// launcher makes (the driver's `cuTensorMapEncodeTiled`) and passes in `maps`, the
    /// kernel's last parameter (`&[u8]`, 128 bytes a map, in order, 64-byte aligned), which
    /// no caller passes. Each map copies boxes of `rows` rows of `bytes` bytes (default 128)
    /// with the `swizzle`-byte swizzle (default 128; 0 for none); `rows` may name a const
    /// generic parameter (`a(rows = BM)`), so that each instance has its own box. A mapped array must be a
    /// C-layout `Array2`/`DisjointArray2` whose address and rows are multiples of 16 bytes;
    /// the launcher refuses other calls before launch.
    tensor_maps => TENSOR_MAPS_ATTR;
    /// `#[dependent_launch]` on a `#[kernel]` function (sm_90+): its launches may start
    /// while the kernel before it on the stream is still finishing (programmatic
    /// dependent launch: the driver's programmatic-stream-serialisation attribute), so that
    /// its blocks' set-up runs under that kernel's last blocks. The kernel must call
    /// `oxide_device::grid::griddepcontrol_wait()` before its first global-memory access,
    /// and may call `griddepcontrol_launch_dependents()` to let the next such kernel start;
    /// `cargo oxide build` refuses one whose PTX has no `griddepcontrol.wait`, and targets
    /// below sm_90. Recorded in the descriptor; pyoxide's compiled launcher sets the
    /// attribute, other launches run it as an ordinary kernel (the wait returns at once).
    /// `#[kernel]` reads it; this macro only runs when it is written above `#[kernel]`, and
    /// moves it below.
    dependent_launch => DEPENDENT_ATTR;
    /// `#[tune(TILE = [64, 128], block = [128, 256, 512])]` on a `#[kernel]` function: the
    /// candidates `pyoxide tune` tries. A const generic parameter's values each make an
    /// instance (its own entry point; the first value is the hand pick, which plain calls
    /// run until a tuned choice says otherwise); a launch parameter's values (`block`,
    /// `per_thread`, `blocks_per_sm`) replace the `#[launch]` policy's, whose own value
    /// must be among them. `key = [a, b]` names integer or bool parameters whose values
    /// (not the array extents) place a call in a shape bucket, for a kernel whose shape is
    /// in scalars. Recorded in the descriptor; see docs/guide/tuning.md.
    /// `#[kernel]` reads it; this macro only runs when it is written above `#[kernel]`, and
    /// moves it below.
    tune => TUNE_ATTR;
}

/// `#[constant] static NAME: ConstantMemory<T> = ConstantMemory::UNINIT;`: a value
/// in constant memory that the host sets before launching (cuda-oxide's constant
/// memory; Python: `module.set_<name>(value)`). See `oxide_device::constant`.
#[proc_macro_attribute]
pub fn constant(attr: TokenStream, item: TokenStream) -> TokenStream {
    expanded(constant::constant(attr.into(), item.into()))
}

/// `#[cuda_module] mod kernels { … }`: cuda-oxide's wrapper around a file's kernels,
/// accepted so its kernel files build unchanged (see `compat.rs`).
#[proc_macro_attribute]
pub fn cuda_module(attr: TokenStream, item: TokenStream) -> TokenStream {
    expanded(compat::cuda_module(attr.into(), item.into()))
}

/// `#[launch_contract(domain = 1, block = (256, 1, 1), …)]`, cuda-oxide's statement of
/// a kernel's launch shape: accepted so its kernels build unchanged; not checked at
/// launch yet (see `compat.rs`). `#[kernel]` removes it when written below it; this
/// runs when it is written above, and leaves the item as it is.
#[proc_macro_attribute]
pub fn launch_contract(_attr: TokenStream, item: TokenStream) -> TokenStream {
    item
}

/// `#[unroll]` / `#[unroll(N)]` on an item (a loop inside a `#[kernel]` has it removed
/// by the kernel macro, since attributes on expressions cannot run macros on stable
/// Rust): a hint with no effect here; LLVM unrolls constant-trip loops by itself.
#[proc_macro_attribute]
pub fn unroll(_attr: TokenStream, item: TokenStream) -> TokenStream {
    item
}

/// `gpu_printf!("x = {}, i = {:x}\n", x, i)`: device printf with Rust format strings
/// (see oxide-device's `print` module).
#[proc_macro]
pub fn gpu_printf(input: TokenStream) -> TokenStream {
    expanded(printf::gpu_printf(input.into()))
}

/// `gpu_printf_c!("i=%d x=%f\n", i, x)`: device printf with a C format string, passed
/// to `vprintf` as it is. Each conversion must match its argument's type (checked at
/// compile time: on a GPU a mismatch prints garbage); `*` widths and precisions, `%n`,
/// `%p` and wide forms are refused by name. Output appears on the host when the launch
/// completes (CUDA's rule).
#[proc_macro]
pub fn gpu_printf_c(input: TokenStream) -> TokenStream {
    expanded(printf::gpu_printf_c(input.into()))
}

/// `gpu_assert!(cond, message…)`'s failure path (oxide-device's `gpu_assert!` calls
/// it): `__gpu_assert_failed!(stringify!(cond), file!(), line!(), format, args…)`.
#[doc(hidden)]
#[proc_macro]
pub fn __gpu_assert_failed(input: TokenStream) -> TokenStream {
    expanded(printf::gpu_assert_failed(input.into()))
}

/// `#[device]`, cuda-oxide's mark for a function called from kernels (needed there so
/// its codegen compiles it for the GPU). Here every function a kernel reaches is
/// compiled for the GPU already, in this crate or another, so `#[device]` only checks
/// that it marks a function, which keeps cuda-oxide code compiling unchanged.
#[proc_macro_attribute]
pub fn device(attr: TokenStream, item: TokenStream) -> TokenStream {
    let attr = proc_macro2::TokenStream::from(attr);
    let item = proc_macro2::TokenStream::from(item);
    if !attr.is_empty() {
        return syn::Error::new_spanned(attr, "#[device] takes no arguments")
            .into_compile_error()
            .into();
    }
    match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(mut func) => {
            compat::bring_float_methods(&mut func);
            quote!(#func).into()
        }
        Err(_) => with_item(
            item.clone(),
            syn::Error::new_spanned(item, "#[device] goes on a function"),
        )
        .into(),
    }
}

/// On error, emit the item as well (less `#[launch_bounds]`), so that code using the
/// function does not add a cascade of "cannot find" errors to the real one.
/// A macro's result: its expansion, or its errors as `compile_error!`s.
fn expanded(result: syn::Result<proc_macro2::TokenStream>) -> TokenStream {
    result.unwrap_or_else(syn::Error::into_compile_error).into()
}

fn with_item(item: proc_macro2::TokenStream, error: syn::Error) -> proc_macro2::TokenStream {
    let error = error.to_compile_error();
    match syn::parse2::<syn::ItemFn>(item.clone()) {
        Ok(mut func) => {
            let _ = parse::take_launch_bounds(&mut func.attrs);
            let _ = parse::take_attr::<parse::LaunchSyntax>(&mut func.attrs, parse::LAUNCH_ATTR);
            let _ = parse::take_attr::<parse::ShapesSyntax>(&mut func.attrs, parse::SHAPES_ATTR);
            let _ = parse::take_attr::<parse::ClusterSyntax>(&mut func.attrs, parse::CLUSTER_ATTR);
            let _ = parse::take_attr::<parse::VariantSyntax>(&mut func.attrs, parse::VARIANT_ATTR);
            let _ = parse::take_attr::<parse::TensorMapsSyntax>(
                &mut func.attrs,
                parse::TENSOR_MAPS_ATTR,
            );
            let _ = parse::take_attr::<parse::TuneSyntax>(&mut func.attrs, parse::TUNE_ATTR);
            let _ = parse::take_flag(&mut func.attrs, parse::DEPENDENT_ATTR);
            quote!(#func #error)
        }
        Err(_) => quote!(#item #error),
    }
}
