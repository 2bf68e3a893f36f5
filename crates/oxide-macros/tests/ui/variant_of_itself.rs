use oxide_device::prelude::*;

#[kernel]
#[variant_of(k)]
pub fn k(_x: &[f32]) {}

fn main() {}
