use oxide_device::prelude::*;

#[kernel]
pub fn sum(_x: &[f32]) -> f32 {
    _x[0]
}

fn main() {}
