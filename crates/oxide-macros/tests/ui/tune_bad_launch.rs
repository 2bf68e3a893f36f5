use oxide_device::prelude::*;

// The hand pick (the policy's value) missing from its list, a block past the launch
// bounds, a parameter the policy does not have, `per_thread = vector`.
#[kernel]
#[launch_bounds(256)]
#[launch(elementwise(out, per_thread = vector, block = 128))]
#[tune(block = [64, 512], per_thread = [4, 8], blocks_per_sm = [2])]
pub fn k(x: &[f32], out: DisjointSlice<f32>) {
    let _ = (x.len(), out.len());
}

// A launch parameter tuned without a #[launch] policy to take the hand pick from.
#[kernel]
#[tune(block = [128, 256])]
pub fn bare(out: DisjointSlice<f32>) {
    let _ = out.len();
}

// 0 blocks a multiprocessor: one block per row means something for a row kernel only.
#[kernel]
#[launch(grid_stride(x, per_thread = 8, blocks_per_sm = 4))]
#[tune(blocks_per_sm = [4, 0])]
pub fn strided(x: &[f32], out: AtomicSlice<f32>) {
    let _ = (x.len(), out.len());
}

fn main() {}
