//! `#[cluster_launch]`'s accepted forms: one to three counts, above or below `#[kernel]`,
//! recorded in the descriptor as (x, y, z) with missing axes 1; a count may name a const
//! generic (each instance its own cluster; an instance whose cluster comes to one block
//! has none).
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

/// A tuned split: SPLIT = 1 is the kernel without a cluster.
#[kernel]
#[tune(SPLIT = [1, 2, 4])]
#[cluster_launch(SPLIT)]
pub fn split<const SPLIT: usize>(x: &[f32]) {
    let _ = (x.len(), SPLIT);
}

/// A named count beside integers, in listed instances.
#[kernel(1, 2)]
#[cluster_launch(X, 2)]
pub fn mixed<const X: usize>(_x: &[f32]) {}

fn main() {
    let cluster = |bytes: &[u8]| KernelDescriptor::decode(bytes).unwrap().cluster;
    assert_eq!(cluster(&__oxide_descriptor_pairs), Some([2, 1, 1]));
    assert_eq!(cluster(&__oxide_descriptor_two_by_four), Some([2, 4, 1]));
    assert_eq!(cluster(&__oxide_descriptor_cube), Some([2, 2, 2]));
    assert_eq!(cluster(&__oxide_descriptor_none), None);
    assert_eq!(cluster(&__oxide_descriptor_split_1), None);
    assert_eq!(cluster(&__oxide_descriptor_split_2), Some([2, 1, 1]));
    assert_eq!(cluster(&__oxide_descriptor_split_4), Some([4, 1, 1]));
    assert_eq!(cluster(&__oxide_descriptor_mixed_1), Some([1, 2, 1]));
    assert_eq!(cluster(&__oxide_descriptor_mixed_2), Some([2, 2, 1]));
    let cube = KernelDescriptor::decode(&__oxide_descriptor_cube).unwrap();
    assert_eq!(cube.launch_bounds.unwrap().max_threads, 128);
}
