//! `#[cluster_launch]`'s accepted forms: one to three counts, above or below `#[kernel]`,
//! recorded in the descriptor as (x, y, z) with missing axes 1.
#![no_std]
extern crate std;

use oxide_abi::descriptor::KernelDescriptor;
use oxide_device::prelude::*;

#[kernel]
#[cluster_launch(2)]
pub fn pairs(_x: &[f32]) {}

#[kernel]
#[cluster_launch(2, 4)]
pub fn two_by_four(_x: &[f32]) {}

/// Above `#[kernel]`, next to launch bounds, with all three axes.
#[cluster_launch(2, 2, 2)]
#[kernel]
#[launch_bounds(128)]
pub fn cube(_x: &[f32]) {}

#[kernel]
pub fn none(_x: &[f32]) {}

fn main() {
    let cluster = |bytes: &[u8]| KernelDescriptor::decode(bytes).unwrap().cluster;
    assert_eq!(cluster(&__oxide_descriptor_pairs), Some([2, 1, 1]));
    assert_eq!(cluster(&__oxide_descriptor_two_by_four), Some([2, 4, 1]));
    assert_eq!(cluster(&__oxide_descriptor_cube), Some([2, 2, 2]));
    assert_eq!(cluster(&__oxide_descriptor_none), None);
    let cube = KernelDescriptor::decode(&__oxide_descriptor_cube).unwrap();
    assert_eq!(cube.launch_bounds.unwrap().max_threads, 128);
}
