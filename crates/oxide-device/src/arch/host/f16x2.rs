//! Emulated `f16x2` arithmetic and packed-half atomics, bit for bit as the GPU: each
//! lane is computed exactly in `f64` and rounded once to binary16 (ties to even).
//! Exact because a product of two halves has at most 22 significant bits and a sum of
//! two halves at most 40; in an `fma` whose sum does not fit 53 bits, the product lies
//! far below the addend's last binary16 bit, where the `f64` rounding cannot move the
//! binary16 one.

use super::super::F16x2Op;
use crate::half::f16;

const CANONICAL_NAN: u16 = 0x7fff;
const SIGN: u16 = 0x8000;

fn is_nan(h: u16) -> bool {
    h & 0x7fff > 0x7c00
}

fn is_subnormal(h: u16) -> bool {
    h & 0x7c00 == 0 && h & 0x03ff != 0
}

fn flush(h: u16) -> u16 {
    if is_subnormal(h) { h & SIGN } else { h }
}

fn value(h: u16) -> f64 {
    f16::from_bits(h).to_f64()
}

/// `x` rounded to the nearest binary16 (ties to even); NaN is the canonical NaN.
pub(crate) fn round_f16(x: f64) -> u16 {
    if x.is_nan() {
        return CANONICAL_NAN;
    }
    let sign = if x.is_sign_negative() { SIGN } else { 0 };
    let a = x.abs();
    // Halfway between the largest finite value (65504) and 2^16 rounds up (to even).
    if a >= 65520.0 {
        return sign | 0x7c00;
    }
    if a < 2f64.powi(-14) {
        // Subnormal (or zero): a multiple of 2^-24; reaching 1024 units is the
        // smallest normal, whose bits are the same integer.
        return sign | (a * 2f64.powi(24)).round_ties_even() as u16;
    }
    let exp = ((a.to_bits() >> 52) as i32) - 1023;
    let mut units = (a * 2f64.powi(10 - exp)).round_ties_even() as u32; // 1024..=2048
    let mut exp = exp;
    if units == 2048 {
        units = 1024;
        exp += 1;
    }
    if exp > 15 {
        return sign | 0x7c00;
    }
    sign | (((exp + 15) as u16) << 10) | (units - 1024) as u16
}

fn lanes(a: u32) -> [u16; 2] {
    [a as u16, (a >> 16) as u16]
}

fn pack(lo: u16, hi: u16) -> u32 {
    lo as u32 | (hi as u32) << 16
}

fn min_max(a: u16, b: u16, max: bool) -> u16 {
    match (is_nan(a), is_nan(b)) {
        (true, true) => CANONICAL_NAN,
        (true, false) => b,
        (false, true) => a,
        _ => {
            let (x, y) = (value(a), value(b));
            // -0 counts as smaller than +0.
            let a_first = if x == y {
                (a & SIGN != 0) != max
            } else {
                (x < y) != max
            };
            if a_first { a } else { b }
        }
    }
}

fn lane(op: F16x2Op, a: u16, b: u16, c: u16) -> u16 {
    let ftz = matches!(
        op,
        F16x2Op::FmaFtz | F16x2Op::FmaFtzSat | F16x2Op::FmaFtzRelu
    );
    let (a, b, c) = if ftz {
        (flush(a), flush(b), flush(c))
    } else {
        (a, b, c)
    };
    let exact = match op {
        F16x2Op::Abs => return a & !SIGN,
        F16x2Op::Neg => return a ^ SIGN,
        F16x2Op::Min => return min_max(a, b, false),
        F16x2Op::Max => return min_max(a, b, true),
        F16x2Op::Add => value(a) + value(b),
        F16x2Op::Sub => value(a) - value(b),
        F16x2Op::Mul => value(a) * value(b),
        _ => value(a) * value(b) + value(c),
    };
    let mut r = round_f16(exact);
    if ftz {
        r = flush(r);
    }
    match op {
        F16x2Op::FmaSat | F16x2Op::FmaFtzSat if is_nan(r) => 0,
        F16x2Op::FmaSat | F16x2Op::FmaFtzSat => round_f16(value(r).clamp(0.0, 1.0)),
        F16x2Op::FmaRelu | F16x2Op::FmaFtzRelu if !is_nan(r) && value(r) < 0.0 => 0,
        _ => r,
    }
}

pub(crate) fn f16x2_unary(op: F16x2Op, a: u32) -> u32 {
    let [a0, a1] = lanes(a);
    pack(lane(op, a0, 0, 0), lane(op, a1, 0, 0))
}

pub(crate) fn f16x2_binary(op: F16x2Op, a: u32, b: u32) -> u32 {
    let ([a0, a1], [b0, b1]) = (lanes(a), lanes(b));
    pack(lane(op, a0, b0, 0), lane(op, a1, b1, 0))
}

pub(crate) fn f16x2_fma(op: F16x2Op, a: u32, b: u32, c: u32) -> u32 {
    let ([a0, a1], [b0, b1], [c0, c1]) = (lanes(a), lanes(b), lanes(c));
    pack(lane(op, a0, b0, c0), lane(op, a1, b1, c1))
}

/// `atom.add.noftz.f16x2`: a compare-and-swap loop on the word, each lane added and
/// rounded as `add.rn.f16x2` does.
pub(crate) unsafe fn atom_add_f16x2(addr: *mut u32, v: u32) -> u32 {
    // SAFETY: the caller promised an aligned word that only atomics touch.
    let word = unsafe { core::sync::atomic::AtomicU32::from_ptr(addr) };
    let order = core::sync::atomic::Ordering::Relaxed;
    word.fetch_update(order, order, |old| Some(f16x2_binary(F16x2Op::Add, old, v)))
        .unwrap_or_else(|old| old)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_half_round_trips_and_ties_go_to_even() {
        for h in 0..=u16::MAX {
            if !is_nan(h) {
                assert_eq!(round_f16(value(h)), h, "{h:#06x}");
            }
        }
        assert_eq!(round_f16(2049.0), 0x6800); // tie: 2048 (even)
        assert_eq!(round_f16(2051.0), 0x6802); // tie: 2052 (even)
        assert_eq!(round_f16(2f64.powi(-25)), 0); // half the smallest subnormal: even, 0
        assert_eq!(round_f16(3.0 * 2f64.powi(-25)), 2);
        assert_eq!(round_f16(65519.0), 0x7bff);
        assert_eq!(round_f16(65520.0), 0x7c00);
    }
}
