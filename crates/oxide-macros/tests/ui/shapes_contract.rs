use oxide_device::prelude::*;

// #[shapes] names shaped array parameters, one dimension per axis.
#[kernel]
#[shapes(a[m, k], b[k], x[n], nope[n], a[m, m])]
pub fn k(a: Array2<f32>, b: Array2<f32>, x: &[f32], mut c: DisjointArray2<f32>) {
    let _ = (a.len(), b.len(), x.len(), c.get_mut_indexed());
}

fn main() {}
