// A `*` width takes the width from an argument; the emulator's snprintf would be
// handed one argument for two conversions. Refused by name.
use oxide_device::prelude::*;

#[kernel]
pub fn pad(x: u32) {
    gpu_printf_c!("%*d\n", 6, x);
}

fn main() {}
