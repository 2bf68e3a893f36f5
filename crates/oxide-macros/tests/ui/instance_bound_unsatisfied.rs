use oxide_device::prelude::*;

#[kernel(f32, bool)]
pub fn scale<T: Copy + core::ops::Mul<Output = T>>(_f: T, _x: &[T], _out: DisjointSlice<T>) {}

fn main() {}
