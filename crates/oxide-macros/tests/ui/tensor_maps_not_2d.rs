use oxide_device::prelude::*;

#[kernel]
#[tensor_maps(maps, x(rows = 64))]
pub fn k(x: &[f32], maps: &[u8]) {
    let _ = (x, maps);
}

fn main() {}
