use oxide_device::prelude::*;

#[kernel]
pub fn k(mut out: DisjointSlice<f32>) {
    static TILE: SharedArray<f32, 32, 512> = SharedArray::UNINIT;
    if let Some(o) = out.get_mut(thread::index_1d()) {
        *o = TILE.len() as f32;
    }
}

fn main() {}
