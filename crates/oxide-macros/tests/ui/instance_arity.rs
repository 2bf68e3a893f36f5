use oxide_device::prelude::*;

#[kernel((f32, 4), f64, (f64, 8, 2))]
pub fn tile<T: Copy, const N: usize>(_x: &[T], _out: DisjointSlice<T>) {}

fn main() {}
