//! Every accepted form of `#[kernel]`, compiled and called on the host.
//! `no_std`, as kernel crates are: the generated code must name only `core`.
#![no_std]
extern crate std;

use oxide_abi::descriptor::{KernelDescriptor, LaunchBounds, LaunchPolicy};
use oxide_abi::{ParamKind, ScalarType};
use oxide_device::prelude::*;

/// Scalars of every kind, including the ones with a different ABI type.
#[kernel]
pub fn scalars(a: i8, b: u16, c: i32, d: u64, e: f64, flag: bool, n: usize, m: isize, mut x: f32) {
    x += 1.0;
    let _ = (a, b, c, d, e, flag, n, m, x);
}

/// Lifetimes are allowed and ignored; so are a path to DisjointSlice and `'_`.
#[kernel]
#[launch_bounds(256, 2)]
pub fn with_lifetimes<'a>(x: &'a [u8], out: oxide_device::DisjointSlice<'_, u8>) {
    let _ = (x, out);
}

/// `#[launch_bounds]` may also be written above `#[kernel]`.
#[launch_bounds(128)]
#[kernel]
pub fn bounds_first(_x: &[f32]) {}

/// Launch policies, written above or below `#[kernel]`, with and without options.
#[launch(block_per_row(out, cols = n, block = 128))]
#[kernel]
pub fn rows(x: &[f32], out: DisjointSlice<f32>, n: u32) {
    let _ = (x, out.len(), n);
}

#[kernel(f32, f64)]
#[launch(grid_stride(x, per_thread = vector, blocks_per_sm = 3))]
pub fn strided<T: Copy>(x: &[T], acc: AtomicSlice<u32>) {
    let _ = (x, acc.len());
}

/// A column reduction: a strip of 128 bytes of columns per block, 1024 threads unless
/// the launch bounds say fewer.
#[kernel(f32, f64)]
#[launch_bounds(512)]
#[launch(columns(out))]
pub fn column_max<T: Copy + PartialOrd>(x: Array2<T>, mut out: DisjointSlice<T>, lowest: T) {
    out.reduce_columns(x, lowest, |a, b| if a > b { a } else { b }, |m| m);
}

/// Type and const generics, several instances each written as a tuple.
#[kernel((f32, 4), (f64, 8), (i32, -1))]
pub fn tile<T: Copy + Default, const N: i64>(x: &[T], mut out: DisjointSlice<T>)
where
    T: PartialEq,
{
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        *o = if N > 0 { x[0] } else { T::default() };
    }
}

/// Unsafe kernels may take `&mut [T]` and raw pointers.
#[kernel]
pub unsafe fn raw(data: &mut [u32], src: *const u32, dst: *mut u32) {
    data[0] = unsafe { *src };
    unsafe { *dst = data[0] + 1 };
}

/// Safe kernels may take raw pointers too (as in cuda-oxide): using one needs `unsafe`.
#[kernel]
pub fn copy_through(src: *const u32, dst: *mut u32) {
    unsafe { *dst = *src * 2 };
}

/// cuda-oxide's module around its kernels; a typed index space; float methods with no
/// `GpuFloat` import in scope.
#[oxide_device::cuda_module]
mod kernels {
    use oxide_device::thread::{self, Index2D};
    use oxide_device::{kernel, DisjointSlice};

    #[kernel]
    pub fn rows_2d(x: &[f32], mut out: DisjointSlice<f32, Index2D<4>>) {
        if let Some((o, idx)) = out.get_mut_indexed() {
            *o = x[idx.get()].sqrt() + thread::index_2d_row() as f32;
        }
    }
}

mod nested {
    use oxide_device::prelude::*;

    #[kernel(u8)]
    pub(crate) fn inner<T>(x: T) {
        let _ = x;
    }
}

/// An atomic parameter; any element, any thread.
#[kernel(u32, f64)]
pub fn accumulate<T: oxide_device::atomic::AtomicValue>(x: &[T], acc: AtomicSlice<T>) {
    for v in x {
        acc[0].fetch_add(*v, oxide_device::atomic::Ordering::Relaxed);
    }
}

/// Shaped arrays of every rank and layout, generic, with a contract written above
/// `#[kernel]` and a `tiles` policy; called on the host as a one-thread launch.
#[shapes(x[n, _], y[3], z[a, b, c], out[n, 2])]
#[kernel(f32, f64)]
#[launch(tiles(out, block = (8, 4), tile = (8, 4)))]
pub fn shaped<T: Copy>(
    x: Array2<'_, T, Strided>,
    y: Array1<T>,
    z: oxide_device::Array<T, 3, Strided>,
    mut out: DisjointArray2<T>,
) {
    if let Some(o) = out.get_mut(index_nd::<2>().unwrap()) {
        *o = x[[0, 0]];
    }
    let _ = (y[0], z.shape());
}

fn main() {
    let (x, y, z) = ([1.5f32, 2.0], [0.0f32; 3], [0.0f32; 1]);
    let mut out = [0.0f32; 4];
    shaped(
        unsafe { oxide_device::Array2::from_raw_parts(x.as_ptr(), [1, 2], [2, 1]) },
        Array1::from_slice(&y, [3]),
        unsafe { oxide_device::Array::from_raw_parts(z.as_ptr(), [1, 1, 1], [0, 0, 0]) },
        DisjointArray2::from_mut_slice(&mut out, [2, 2]),
    );
    assert_eq!(out, [1.5, 0.0, 0.0, 0.0]);
    let d = KernelDescriptor::decode(&__oxide_descriptor_shaped_f64).unwrap();
    assert_eq!(d.params[0].kind, ParamKind::Array);
    assert_eq!(d.params[3].kind, ParamKind::DisjointArray);
    let dims: std::vec::Vec<_> = d.params.iter().map(|p| p.array.clone().unwrap().dims).collect();
    assert_eq!(dims, [["n", "_"].as_slice(), &["3"], &["a", "b", "c"], &["n", "2"]]);
    assert_eq!(
        d.launch,
        Some(LaunchPolicy::Tiles { over: "out".into(), block: [8, 4, 1], tile: [8, 4, 1] })
    );

    let d = KernelDescriptor::decode(&__oxide_descriptor_scalars).unwrap();
    let kinds: std::vec::Vec<_> = d.params.iter().map(|p| (p.kind, p.ty)).collect();
    assert_eq!(kinds[5], (ParamKind::Scalar, ScalarType::Bool));
    assert_eq!(kinds[6], (ParamKind::Scalar, ScalarType::Usize));
    assert_eq!(d.params[8].name, "x");

    let d = KernelDescriptor::decode(&__oxide_descriptor_with_lifetimes).unwrap();
    assert_eq!(d.launch_bounds, Some(LaunchBounds { max_threads: 256, min_blocks: Some(2) }));

    let d = KernelDescriptor::decode(&__oxide_descriptor_bounds_first).unwrap();
    assert_eq!(d.launch_bounds, Some(LaunchBounds { max_threads: 128, min_blocks: None }));

    let d = KernelDescriptor::decode(&__oxide_descriptor_rows).unwrap();
    assert_eq!(
        d.launch,
        Some(LaunchPolicy::BlockPerRow { over: "out".into(), cols: Some("n".into()), block: 128, blocks_per_sm: 0 })
    );
    let d = KernelDescriptor::decode(&__oxide_descriptor_strided_f64).unwrap();
    assert_eq!(
        d.launch,
        Some(LaunchPolicy::GridStride {
            over: "x".into(),
            per_thread: 2,
            block: 256,
            blocks_per_sm: 3
        })
    );

    let d = KernelDescriptor::decode(&__oxide_descriptor_column_max_f64).unwrap();
    assert_eq!(d.launch, Some(LaunchPolicy::Columns { over: "out".into(), per_block: 16, block: 512 }));

    let d = KernelDescriptor::decode(&__oxide_descriptor_tile_i32_m1).unwrap();
    assert_eq!((d.instance[1].param.as_str(), d.instance[1].value.as_str()), ("N", "-1"));
    assert!(KernelDescriptor::decode(&__oxide_descriptor_tile_f64_8).is_ok());

    let d = KernelDescriptor::decode(&__oxide_descriptor_raw).unwrap();
    assert!(d.is_unsafe);
    let kinds: std::vec::Vec<_> = d.params.iter().map(|p| (p.kind, p.mutable)).collect();
    assert_eq!(kinds, [(ParamKind::MutSlice, true), (ParamKind::Pointer, false), (ParamKind::Pointer, true)]);

    let d = KernelDescriptor::decode(&__oxide_descriptor_copy_through).unwrap();
    assert!(!d.is_unsafe);
    let d = KernelDescriptor::decode(&kernels::__oxide_descriptor_rows_2d).unwrap();
    assert_eq!((d.params[1].kind, d.params[1].mutable), (ParamKind::DisjointSlice, true));

    let d = KernelDescriptor::decode(&nested::__oxide_descriptor_inner_u8).unwrap();
    assert!(d.source.module.ends_with("::nested"), "{}", d.source.module);

    let d = KernelDescriptor::decode(&__oxide_descriptor_accumulate_f64).unwrap();
    assert_eq!((d.params[1].kind, d.params[1].ty, d.params[1].mutable), (ParamKind::AtomicSlice, ScalarType::F64, true));

    // The kernels are still ordinary functions.
    scalars(1, 2, 3, 4, 5.0, true, 6, -7, 8.0);
    let mut out = [0.0f32; 2];
    tile::<f32, 4>(&[9.0], DisjointSlice::from_mut(&mut out));
    assert_eq!(out, [9.0, 0.0]);
    let (mut data, src, mut dst) = ([0u32; 1], 41u32, 0u32);
    unsafe { raw(&mut data, &src, &mut dst) };
    assert_eq!(dst, 42);
    nested::inner(1u8);
    let (src, mut dst) = (21u32, 0u32);
    copy_through(&src, &mut dst);
    assert_eq!(dst, 42);
    let mut rows = [0.0f32; 4];
    kernels::rows_2d(&[16.0], DisjointSlice::from_mut_with_space(&mut rows));
    assert_eq!(rows, [4.0, 0.0, 0.0, 0.0]);
    let mut total = [1u32];
    accumulate::<u32>(&[2, 3], AtomicSlice::from_mut(&mut total));
    assert_eq!(total, [6]);
}
