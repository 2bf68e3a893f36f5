use oxide_device::prelude::*;

// #[shapes] names shaped array parameters (one dimension per axis) and slices.
#[kernel]
#[shapes(a[m, k], b[k], s[n], nope[n], a[m, m])]
pub fn k(a: Array2<f32>, b: Array2<f32>, s: u32, mut c: DisjointArray2<f32>) {
    let _ = (a.len(), b.len(), s, c.get_mut_indexed());
}

fn main() {}
