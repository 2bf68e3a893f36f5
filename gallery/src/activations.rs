//! Elementwise activations, fused with what feeds them.

use oxide_device::math;
use oxide_device::prelude::*;

/// GELU (the erf form, PyTorch's default) of `x` plus a bias broadcast over the rows:
/// `out[r, c] = gelu(x[r, c] + bias[c])`. One block per row; the row and the bias are
/// read as 128-bit vectors.
#[kernel]
#[launch_bounds(1024)]
#[shapes(x[rows, cols], bias[cols], out[rows, cols])]
#[launch(block_per_row(out, block = 1024))]
pub fn bias_gelu(x: Array2<f32>, bias: &[f32], mut out: DisjointArray2<f32>) {
    let Some(mut row) = out.block_row_mut() else {
        return;
    };
    let r = row.row();
    row.map((x.row_slice(r), bias), |(v, b)| gelu(v + b));
}

#[inline(always)]
fn gelu(v: f32) -> f32 {
    0.5 * v * (1.0 + math::erf(v * core::f32::consts::FRAC_1_SQRT_2))
}

/// SwiGLU's gate: `out = silu(gate) · up = gate / (1 + exp(-gate)) · up`, elementwise,
/// as 128-bit loads and stores.
#[kernel]
#[shapes(gate[n], up[n], out[n])]
#[launch(elementwise(out, per_thread = vector))]
pub fn swiglu(gate: &[f32], up: &[f32], mut out: DisjointSlice<f32>) {
    out.map((gate, up), |(g, u)| g / (1.0 + (-g).exp()) * u);
}
