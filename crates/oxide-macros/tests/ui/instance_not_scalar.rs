use oxide_device::prelude::*;

pub struct Pair(f32, f32);

#[kernel(f32, Pair)]
pub fn k<T: Copy>(_x: &[T]) {}

fn main() {}
