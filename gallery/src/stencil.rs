//! Stencils over a 2-D grid.

use oxide_device::prelude::*;

/// The 5-point Laplacian with zeros outside the grid: `out[i, j] = x[i−1, j] + x[i+1, j]
/// + x[i, j−1] + x[i, j+1] − 4·x[i, j]` (PyTorch: `conv2d` with the 3×3 Laplacian kernel
/// and `padding=1`). One thread per element, 16×16 blocks over `out`.
#[kernel]
#[shapes(x[rows, cols], out[rows, cols])]
pub fn laplacian_2d(x: Array2<f32>, mut out: DisjointArray2<f32>) {
    if let Some(idx) = index_nd::<2>() {
        let [i, j] = idx.get();
        let at = |di: isize, dj: isize| {
            let (r, c) = (i.wrapping_add_signed(di), j.wrapping_add_signed(dj));
            x.get([r, c]).copied().unwrap_or(0.0)
        };
        let v = at(-1, 0) + at(1, 0) + at(0, -1) + at(0, 1) - 4.0 * at(0, 0);
        if let Some(o) = out.get_mut(idx) {
            *o = v;
        }
    }
}
