use oxide_device::prelude::*;

// A name that is neither a const generic nor a launch parameter, a type parameter, a
// value twice, a name twice, an empty list, a value that is not a literal.
#[kernel(f32)]
#[launch(elementwise(out, block = 256))]
#[tune(TILE = [1, 1], T = [2], COLS = [8], block = [], block = [256], N = [3 + 1])]
pub fn k<T: Copy, const TILE: u32, const N: u32>(x: &[T], out: DisjointSlice<T>) {
    let _ = (x.len(), out.len(), TILE, N);
}

// Lists that multiply past the limit.
#[kernel]
#[tune(A = [1, 2, 3, 4, 5, 6, 7, 8, 9], B = [1, 2, 3, 4, 5, 6, 7, 8, 9])]
pub fn many<const A: u32, const B: u32>(out: DisjointSlice<u32>) {
    let _ = (out.len(), A, B);
}

#[kernel]
#[tune()]
pub fn nothing(out: DisjointSlice<u32>) {
    let _ = out.len();
}

fn main() {}
