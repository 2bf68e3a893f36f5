use oxide_device::prelude::*;

#[kernel]
#[tensor_maps(maps, a(rows = 64))]
pub fn k(maps: &[u8], a: Array2<f32>) {
    let _ = (maps, a);
}

fn main() {}
