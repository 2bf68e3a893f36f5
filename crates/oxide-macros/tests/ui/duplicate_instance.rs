use oxide_device::prelude::*;

#[kernel(f32, f64, f32)]
pub fn k<T: Copy>(_x: &[T]) {}

fn main() {}
