use oxide_device::prelude::*;

// `tiles` needs a 2-D or 3-D shaped array, a block within the launch bounds and a tile.
#[kernel]
#[launch(tiles(x, block = (16, 16), tile = (16, 16)))]
pub fn flat(x: &[f32], mut out: DisjointArray2<f32>) {
    let _ = (x.len(), out.get_mut_indexed());
}

#[kernel]
#[launch_bounds(128)]
#[launch(tiles(out, block = (16, 16), tile = (0, 16)))]
pub fn big(mut out: DisjointArray2<f32>) {
    let _ = out.get_mut_indexed();
}

#[kernel]
#[launch(tiles(out, block = (16, 16)))]
pub fn no_tile(mut out: DisjointArray2<f32>) {
    let _ = out.get_mut_indexed();
}

fn main() {}
