//! A variant's declaration (`#[variant_of]`, `#[tensor_maps]`, a `persistent_tiles`
//! launch with its shared memory) reaches the descriptor.
#![no_std]
extern crate std;

use oxide_abi::descriptor::{KernelDescriptor, LaunchPolicy, TensorMap};
use oxide_device::prelude::*;

#[kernel]
#[launch_bounds(384, 1)]
#[variant_of(mm)]
#[launch(persistent_tiles(c, block = (384, 1), tile = (256, 128), shared = 230_464))]
#[shapes(a[m, k], b[k, n], c[m, n])]
#[tensor_maps(maps, a(rows = 128), b(rows = 64, bytes = 64, swizzle = 64), c(rows = 64))]
pub fn mm_fast(a: Array2<f32>, b: Array2<f32>, c: DisjointArray2<f32>, maps: &[u8]) {
    let _ = (a.rows(), b.cols(), c.rows(), maps.len());
}

fn main() {
    let d = KernelDescriptor::decode(&__oxide_descriptor_mm_fast).unwrap();
    assert_eq!(d.variant_of.as_deref(), Some("mm"));
    assert_eq!(d.shared_bytes, Some(230_464));
    assert_eq!(
        d.launch,
        Some(LaunchPolicy::PersistentTiles {
            over: "c".into(),
            block: [384, 1, 1],
            tile: [256, 128, 1],
            blocks_per_sm: 1,
        })
    );
    let maps = d.tensor_maps.unwrap();
    assert_eq!(maps.param, "maps");
    let map = |array: &str, box_rows, box_bytes, swizzle_bytes| TensorMap {
        array: array.into(),
        box_rows,
        box_bytes,
        swizzle_bytes,
    };
    assert_eq!(maps.maps, [map("a", 128, 128, 128), map("b", 64, 64, 64), map("c", 64, 128, 128)]);
}
