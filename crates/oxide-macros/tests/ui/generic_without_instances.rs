use oxide_device::prelude::*;

#[kernel]
pub fn scale<T: Copy>(_x: &[T], _out: DisjointSlice<T>) {}

fn main() {}
