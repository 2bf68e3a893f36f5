use oxide_device::prelude::*;
use oxide_device::tma::TmaDescriptor;

#[kernel]
pub fn by_reference(_map: &TmaDescriptor, _out: DisjointSlice<u8>) {}

#[kernel]
pub fn mutable(mut _map: TmaDescriptor, _out: DisjointSlice<u8>) {}

fn main() {}
