use oxide_device::prelude::*;

// One block per row needs the row length from an integer parameter.
#[kernel]
#[launch(block_per_row(out))]
pub fn k(out: DisjointSlice<f32>, cols: u32) {
    let _ = (out.len(), cols);
}

#[kernel]
#[launch(block_per_row(out, cols = scale))]
pub fn j(out: DisjointSlice<f32>, scale: f32) {
    let _ = (out.len(), scale);
}

fn main() {}
