//! `#[tune(key = [...])]` names integer or bool parameters of the kernel, each once.
use oxide_device::prelude::*;

#[kernel]
#[tune(V = [0, 1], key = [n, scale, missing, x, n, 3])]
pub fn keyed<const V: u32>(x: &[f32], n: u32, scale: f32, out: DisjointSlice<f32>) {
    let _ = (x.len(), n, scale, V, out.len());
}

#[kernel]
#[tune(V = [0, 1], key = [])]
pub fn no_key<const V: u32>(x: &[f32]) {
    let _ = (x.len(), V);
}

fn main() {}
