use oxide_device::prelude::*;

// A shaped array has a rank from 1 to 3 and the layout C or Strided.
#[kernel]
pub fn rank4(a: Array<f32, 4>) {
    let _ = a;
}

#[kernel]
pub fn layout(a: Array2<f32, Transposed>) {
    let _ = a;
}

fn main() {}
