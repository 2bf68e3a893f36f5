use oxide_device::prelude::*;

// `over` must be a slice parameter, and one that exists.
#[kernel]
#[launch(elementwise(n))]
pub fn k(n: u32, out: DisjointSlice<f32>) {
    let _ = (n, out.len());
}

#[kernel]
#[launch(grid_stride(y))]
pub fn j(x: &[f32]) {
    let _ = x;
}

fn main() {}
