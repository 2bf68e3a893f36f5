use oxide_device::prelude::*;

#[kernel]
#[launch(elementwise(out, shared = 300_000))]
pub fn k(mut out: DisjointSlice<f32>) {
    let _ = &mut out;
}

fn main() {}
