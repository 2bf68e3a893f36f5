//! GPU backend of `f16x2` and the packed-half atomics: one PTX instruction each, on
//! `.b32` registers (PTX keeps an `f16x2` in one). `.rn` is written out so that ptxas
//! keeps a `mul` and an `add` apart (it may fuse them when no rounding is named).

use crate::arch::F16x2Op;
use core::arch::asm;

macro_rules! op1 {
    ($ins:literal, $a:expr) => {{
        let d: u32;
        // SAFETY: arithmetic on registers.
        unsafe {
            asm!(concat!($ins, " {d}, {a};"), d = out(reg32) d, a = in(reg32) $a,
                 options(pure, nomem, nostack, preserves_flags))
        };
        d
    }};
}

macro_rules! op2 {
    ($ins:literal, $a:expr, $b:expr) => {{
        let d: u32;
        // SAFETY: arithmetic on registers.
        unsafe {
            asm!(concat!($ins, " {d}, {a}, {b};"), d = out(reg32) d, a = in(reg32) $a,
                 b = in(reg32) $b, options(pure, nomem, nostack, preserves_flags))
        };
        d
    }};
}

macro_rules! op3 {
    ($ins:literal, $a:expr, $b:expr, $c:expr) => {{
        let d: u32;
        // SAFETY: arithmetic on registers.
        unsafe {
            asm!(concat!($ins, " {d}, {a}, {b}, {c};"), d = out(reg32) d, a = in(reg32) $a,
                 b = in(reg32) $b, c = in(reg32) $c, options(pure, nomem, nostack, preserves_flags))
        };
        d
    }};
}

#[inline(always)]
pub(crate) fn f16x2_unary(op: F16x2Op, a: u32) -> u32 {
    match op {
        F16x2Op::Abs => op1!("abs.f16x2", a),
        _ => op1!("neg.f16x2", a),
    }
}

#[inline(always)]
pub(crate) fn f16x2_binary(op: F16x2Op, a: u32, b: u32) -> u32 {
    match op {
        F16x2Op::Add => op2!("add.rn.f16x2", a, b),
        F16x2Op::Sub => op2!("sub.rn.f16x2", a, b),
        F16x2Op::Mul => op2!("mul.rn.f16x2", a, b),
        F16x2Op::Min => op2!("min.f16x2", a, b),
        _ => op2!("max.f16x2", a, b),
    }
}

#[inline(always)]
pub(crate) fn f16x2_fma(op: F16x2Op, a: u32, b: u32, c: u32) -> u32 {
    match op {
        F16x2Op::FmaFtz => op3!("fma.rn.ftz.f16x2", a, b, c),
        F16x2Op::FmaSat => op3!("fma.rn.sat.f16x2", a, b, c),
        F16x2Op::FmaFtzSat => op3!("fma.rn.ftz.sat.f16x2", a, b, c),
        F16x2Op::FmaRelu => op3!("fma.rn.relu.f16x2", a, b, c),
        F16x2Op::FmaFtzRelu => op3!("fma.rn.ftz.relu.f16x2", a, b, c),
        _ => op3!("fma.rn.f16x2", a, b, c),
    }
}

/// `atom.add.noftz.f16x2` (sm_70) on a generic address.
#[inline(always)]
pub(crate) unsafe fn atom_add_f16x2(addr: *mut u32, v: u32) -> u32 {
    let old: u32;
    // SAFETY: upheld by the caller (`atomic::atom_add_f16x2`).
    unsafe {
        asm!("atom.add.noftz.f16x2 {o}, [{p}], {v};", o = out(reg32) old, p = in(reg64) addr,
             v = in(reg32) v, options(nostack, preserves_flags))
    };
    old
}
