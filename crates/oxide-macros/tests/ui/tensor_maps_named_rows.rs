use oxide_device::prelude::*;

// A box's rows may name a const generic parameter (each instance its own box), but not
// another name, and no other option may name one.
#[kernel]
#[tensor_maps(maps, a(rows = ROWS), b(rows = 64, bytes = WIDE))]
pub fn unknown(a: Array2<f32>, b: Array2<f32>, maps: &[u8]) {
    let _ = (a, b, maps);
}

// A tuned row count TMA cannot box, in some instance.
#[kernel]
#[tune(BM = [64, 512])]
#[tensor_maps(maps, a(rows = BM))]
pub fn too_tall<const BM: usize>(a: Array2<f32>, maps: &[u8]) {
    let _ = (a, maps);
}

fn main() {}
