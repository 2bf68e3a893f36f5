use oxide_device::prelude::*;

pub struct Scaler(f32);

impl Scaler {
    #[kernel]
    pub fn scale(&self, _out: DisjointSlice<f32>) {}
}

fn main() {}
