use oxide_device::prelude::*;

#[kernel]
pub struct K;

fn main() {}
