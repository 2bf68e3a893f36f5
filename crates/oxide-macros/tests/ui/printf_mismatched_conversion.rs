// `%d` reads a 32-bit int; an f32 is passed as a double, so a GPU prints garbage.
use oxide_device::prelude::*;

#[kernel]
pub fn show(x: f32, n: i64) {
    gpu_printf_c!("x = %d\n", x);
    gpu_printf!("n = %d\n", n);
}

fn main() {}
