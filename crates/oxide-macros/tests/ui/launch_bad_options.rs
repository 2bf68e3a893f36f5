use oxide_device::prelude::*;

// Options that the policy does not take, values out of range, a key given twice.
#[kernel]
#[launch_bounds(128)]
#[launch(elementwise(out, per_thread = 0, block = 256, blocks_per_sm = 2))]
pub fn k(x: &[f32], mut out: DisjointSlice<f32>) {
    out.map(x, |v| v);
}

#[kernel]
#[launch(grid_stride(x, per_thread = many, block = 64, block = 32))]
pub fn j(x: &[f32]) {
    let _ = x;
}

#[kernel]
#[launch(segments(out, block = 64))]
pub fn s(out: DisjointSlice<u32>) {
    let _ = out.len();
}

fn main() {}
