use oxide_device::prelude::*;

#[kernel((4, f32))]
pub fn tile<T: Copy, const N: usize>(_x: &[T]) {}

fn main() {}
