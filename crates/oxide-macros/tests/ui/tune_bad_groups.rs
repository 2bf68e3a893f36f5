use oxide_device::prelude::*;

// A tuple of one name, a launch parameter, a type parameter and an unknown name in a
// tuple, a name in a tuple and a list, a candidate of the wrong arity, one that is not a
// tuple, a tuple twice, a value that is not a literal, an empty list.
#[kernel(f32)]
#[launch(elementwise(out, block = 256))]
#[tune((A) = [(1)], (B, block) = [(1, 128)], (T, COLS) = [(1, 2)], (C, D) = [(1, 2, 3), 4, (1, 2), (1, 2), (1 + 1, 2)], (E, C) = [])]
pub fn k<T: Copy, const A: u32, const B: u32, const C: u32, const D: u32, const E: u32>(
    x: &[T],
    out: DisjointSlice<T>,
) {
    let _ = (x.len(), out.len(), A, B, C, D, E);
}

fn main() {}
