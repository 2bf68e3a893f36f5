use oxide_device::prelude::*;

// Every generic parameter tuned, yet instances listed.
#[kernel(4)]
#[tune(N = [4, 8])]
pub fn all_tuned<const N: usize>(out: DisjointSlice<u32>) {
    let _ = (out.len(), N);
}

// Instances must bind the untuned parameters only.
#[kernel((f32, 4))]
#[tune(N = [4, 8])]
pub fn arity<T: Copy, const N: usize>(x: &[T]) {
    let _ = (x.len(), N);
}

// An untuned type parameter with no instance listed.
#[kernel]
#[tune(N = [4, 8])]
pub fn unlisted<T: Copy, const N: usize>(x: &[T]) {
    let _ = (x.len(), N);
}

fn main() {}
