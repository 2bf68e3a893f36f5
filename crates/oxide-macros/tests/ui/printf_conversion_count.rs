// Two conversions read two arguments.
use oxide_device::prelude::*;

#[kernel]
pub fn show(x: u32) {
    gpu_printf_c!("%u and %u\n", x);
}

fn main() {}
