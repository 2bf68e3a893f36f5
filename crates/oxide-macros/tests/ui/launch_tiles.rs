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

// A tile extent may name a const generic parameter (each instance its own tile), not a
// type parameter or another name; a block extent is an integer.
#[kernel(f32)]
#[launch(tiles(out, block = (16, 16), tile = (T, 16)))]
pub fn type_tile<T: Copy>(mut out: DisjointArray2<T>) {
    let _ = out.get_mut_indexed();
}

#[kernel]
#[launch(tiles(out, block = (16, 16), tile = (ROWS, 16)))]
pub fn unknown_tile(mut out: DisjointArray2<f32>) {
    let _ = out.get_mut_indexed();
}

#[kernel]
#[launch(tiles(out, block = (B, 16), tile = (16, 16)))]
#[tune(B = [16])]
pub fn named_block<const B: usize>(mut out: DisjointArray2<f32>) {
    let _ = out.get_mut_indexed();
}

// Each instance's value of a named extent is an integer from 1 to 65536.
#[kernel]
#[launch(tiles(out, block = (16, 16), tile = (TILE, 16)))]
#[tune(TILE = [16, 0])]
pub fn zero_tile<const TILE: usize>(mut out: DisjointArray2<f32>) {
    let _ = out.get_mut_indexed();
}

fn main() {}
