use oxide_device::prelude::*;

#[kernel]
#[tensor_maps(maps, a(rows = 300), b(rows = 8, bytes = 256), c(cols = 4))]
pub fn k(a: Array2<f32>, b: Array2<f32>, c: Array2<f32>, maps: &[u8]) {
    let _ = (a, b, c, maps);
}

fn main() {}
