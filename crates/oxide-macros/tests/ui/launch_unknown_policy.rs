use oxide_device::prelude::*;

#[kernel]
#[launch(per_element(out))]
pub fn k(x: &[f32], mut out: DisjointSlice<f32>) {
    out.map(x, |v| v);
}

fn main() {}
