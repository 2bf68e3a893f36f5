use oxide_device::prelude::*;

#[kernel]
#[launch(elementwise(out))]
#[launch(elementwise(out, per_thread = 4))]
pub fn k(x: &[f32], mut out: DisjointSlice<f32>) {
    out.map(x, |v| v);
}

fn main() {}
