use oxide_device::prelude::*;

#[kernel]
pub async fn k(_x: &[f32]) {}

fn main() {}
