// A struct by value crosses the launch ABI as its bytes: it must be `Copy`.
use oxide_device::prelude::*;

pub struct Big {
    pub v: [f32; 4],
}

#[kernel]
pub fn k(_b: Big) {}

fn main() {}
