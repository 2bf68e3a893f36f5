//! Integer dot products of packed bytes and halfwords (`dp4a`, `dp2a.lo`), cuda-oxide's
//! `dotprod` module: one instruction on the GPU, the same arithmetic on the emulator.

/// `INS d, a, b, c;` on registers: the GPU's form of each function here.
#[cfg(target_arch = "nvptx64")]
macro_rules! dot_asm {
    ($ins:literal, $t:ty, $a:expr, $b:expr, $c:expr) => {{
        let d: $t;
        // SAFETY: arithmetic on registers.
        unsafe {
            core::arch::asm!(concat!($ins, " {}, {}, {}, {};"), out(reg32) d, in(reg32) $a,
                in(reg32) $b, in(reg32) $c, options(pure, nomem, nostack))
        };
        d
    }};
}

/// Each function: `(0..lanes).fold(c, |acc, k| acc.wrapping_add(product))` over the
/// `k`-th parts of `a` and `b` on the emulator; the PTX instruction named on the GPU.
macro_rules! dot_products {
    ($(
        $(#[$m:meta])*
        $name:ident -> $t:ty = $ins:literal, $lanes:literal lanes: |$a:ident, $b:ident, $k:ident| $product:expr;
    )*) => {$(
        $(#[$m])*
        #[inline(always)]
        pub fn $name($a: u32, $b: u32, c: $t) -> $t {
            #[cfg(target_arch = "nvptx64")]
            {
                dot_asm!($ins, $t, $a, $b, c)
            }
            #[cfg(not(target_arch = "nvptx64"))]
            (0..$lanes).fold(c, |acc, $k| acc.wrapping_add($product))
        }
    )*};
}

dot_products! {
    /// Products of the four signed bytes of `a` and `b`, summed, plus `c` (wrapping), as
    /// PTX `dp4a.s32.s32`.
    dp4a_s32 -> i32 = "dp4a.s32.s32", 4 lanes: |a, b, k| {
        let (x, y) = ((a >> (8 * k)) as u8 as i8, (b >> (8 * k)) as u8 as i8);
        i32::from(x) * i32::from(y)
    };
    /// [`dp4a_s32`] with unsigned bytes (`dp4a.u32.u32`).
    dp4a_u32 -> u32 = "dp4a.u32.u32", 4 lanes: |a, b, k| {
        ((a >> (8 * k)) & 0xFF) * ((b >> (8 * k)) & 0xFF)
    };
    /// The two signed halfwords of `a` times the low two signed bytes of `b`, summed, plus
    /// `c` (`dp2a.lo.s32.s32`).
    dp2a_s32 -> i32 = "dp2a.lo.s32.s32", 2 lanes: |a, b, k| {
        let (x, y) = ((a >> (16 * k)) as u16 as i16, (b >> (8 * k)) as u8 as i8);
        i32::from(x) * i32::from(y)
    };
    /// [`dp2a_s32`] unsigned (`dp2a.lo.u32.u32`).
    dp2a_u32 -> u32 = "dp2a.lo.u32.u32", 2 lanes: |a, b, k| {
        ((a >> (16 * k)) & 0xFFFF) * ((b >> (8 * k)) & 0xFF)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_dot_products() {
        // bytes of a: 1, -2, 3, -4; of b: 5, 6, -7, 8.
        let a = u32::from_le_bytes([1, (-2i8) as u8, 3, (-4i8) as u8]);
        let b = u32::from_le_bytes([5, 6, (-7i8) as u8, 8]);
        assert_eq!(dp4a_s32(a, b, 10), 10 + 5 - 12 - 21 - 32);
        assert_eq!(dp4a_u32(0x0403_0201, 0x0101_0101, 1), 11);
        // halfwords of a: -3, 1000; low bytes of b: 2, -1.
        let a2 = ((1000u32) << 16) | ((-3i16) as u16 as u32);
        let b2 = u32::from_le_bytes([2, 0xFF, 9, 9]);
        assert_eq!(dp2a_s32(a2, b2, 0), -6 - 1000);
        assert_eq!(dp2a_u32(0x0002_0003, 0x0000_0504, 7), 7 + 12 + 10);
    }
}
