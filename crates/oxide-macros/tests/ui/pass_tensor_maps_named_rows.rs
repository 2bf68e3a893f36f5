//! A tensor map's box rows may name a const generic: each tuned instance's descriptor
//! records its own box.
#![no_std]
extern crate std;

use oxide_abi::descriptor::KernelDescriptor;
use oxide_device::prelude::*;

#[kernel]
#[tune(BM = [128, 16])]
#[tensor_maps(maps, a(rows = BM), b(rows = 64))]
pub fn per_instance<const BM: usize>(a: Array2<f32>, b: Array2<f32>, maps: &[u8]) {
    let _ = (a, b, maps, BM);
}

fn main() {
    let rows = |bytes: &[u8]| -> std::vec::Vec<u32> {
        let maps = KernelDescriptor::decode(bytes).unwrap().tensor_maps.unwrap();
        maps.maps.iter().map(|m| m.box_rows).collect()
    };
    assert_eq!(rows(&__oxide_descriptor_per_instance_128), [128, 64]);
    assert_eq!(rows(&__oxide_descriptor_per_instance_16), [16, 64]);
}
