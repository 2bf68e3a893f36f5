use oxide_device::prelude::*;

// A slice's #[shapes] entry is one length: a name or a number, not two, not `_`.
#[kernel]
#[shapes(x[n, m], y[_], out[99999999999999999999999])]
pub fn k(x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
    let _ = (x.len(), y.len(), out.get_mut(thread::index_1d()));
}

// A raw pointer has no length to give.
#[kernel]
#[shapes(p[n], x[n])]
pub unsafe fn raw(p: *const f32, x: &[f32]) {
    let _ = (p, x.len());
}

fn main() {}
