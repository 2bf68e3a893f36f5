//! Strided copies: any view in, any view out whose elements do not overlap (F-order,
//! transposed, sliced), one thread per element of the output. What
//! `numpy.ascontiguousarray` / `torch.Tensor.contiguous` do, and the shaped-array
//! kernels' simplest exercise of strides on both sides.

use oxide_device::prelude::*;

/// `out[i, j] = x[i, j]` for views of any strides. A plain call launches 16×16 blocks
/// over `out`.
#[kernel(f32, f64, u32)]
#[shapes(x[m, n], out[m, n])]
pub fn copy_2d<T: Copy>(x: Array2<T, Strided>, mut out: DisjointArray2<T, Strided>) {
    if let Some(idx) = index_nd::<2>() {
        let at = idx.get();
        if let (Some(v), Some(o)) = (x.get(at), out.get_mut(idx)) {
            *o = *v;
        }
    }
}

/// `out[i, j, l] = x[i, j, l]` for views of any strides. A plain call launches 8×8×4
/// blocks over `out` (x over its last dimension).
#[kernel(f32, f64, u32)]
#[shapes(x[a, b, c], out[a, b, c])]
pub fn copy_3d<T: Copy>(x: Array3<T, Strided>, mut out: DisjointArray3<T, Strided>) {
    if let Some(idx) = index_nd::<3>() {
        let at = idx.get();
        if let (Some(v), Some(o)) = (x.get(at), out.get_mut(idx)) {
            *o = *v;
        }
    }
}
