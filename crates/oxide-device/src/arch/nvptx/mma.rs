//! GPU backend of `mma`: tensor-core and async-copy instructions as inline PTX.
//!
//! LLVM 22 has `llvm.nvvm.mma.*`, `ldmatrix` and `cp.async` intrinsics, but they take
//! shared-memory (`addrspace(3)`) pointers or return LLVM structs, neither of which a
//! Rust `extern` declaration can spell; `asm!` says exactly which instruction runs.
//! None of these blocks is `pure`: LLVM must not move a warp-collective instruction
//! into a branch or drop it, and an `asm!` with side effects stays where it is. The
//! ones that touch memory leave out `nomem`, so they order with the loads and stores
//! around them.

use core::arch::asm;

macro_rules! mma {
    ($($name:ident: $shape:literal, $ty:literal;)*) => {$(
        #[inline(always)]
        pub(crate) unsafe fn $name(c: [f32; 4], a: [u32; 4], b: [u32; 2]) -> [f32; 4] {
            let mut d = c;
            // SAFETY: the caller's whole warp executes this together (`mma` docs).
            unsafe {
                asm!(
                    concat!(
                        "mma.sync.aligned.", $shape, ".row.col.f32.", $ty, ".", $ty, ".f32 ",
                        "{{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, ",
                        "{{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};"
                    ),
                    d0 = inout(reg32) d[0], d1 = inout(reg32) d[1],
                    d2 = inout(reg32) d[2], d3 = inout(reg32) d[3],
                    a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
                    b0 = in(reg32) b[0], b1 = in(reg32) b[1],
                    options(nomem, nostack, preserves_flags),
                );
            }
            d
        }
    )*};
}

mma! {
    mma_m16n8k16_bf16: "m16n8k16", "bf16";
    mma_m16n8k16_f16: "m16n8k16", "f16";
    mma_m16n8k8_tf32: "m16n8k8", "tf32";
}

register_asm! {
    cvt_rna_tf32(f32) -> u32 = "cvt.rna.tf32.f32";
}

/// `ldmatrix`/`stmatrix` (`$ins`) at the shared row `$row` (a generic address) of shape
/// `.x{N}` (`.trans` with `TRANS`): each of `$regs[..N]` an operand, written (`out`) or
/// read (`in`). The register list `{r0, …}` comes after the address for `stmatrix`.
macro_rules! matrix_asm {
    ($ins:ident, $row:ident, $dir:ident $regs:ident) => {
        match (N, TRANS) {
            (1, false) => matrix_asm!(@ $ins, "x1", $row, $dir, r0 = $regs[0]),
            (1, true) => matrix_asm!(@ $ins, "x1.trans", $row, $dir, r0 = $regs[0]),
            (2, false) => matrix_asm!(@ $ins, "x2", $row, $dir, r0 = $regs[0], r1 = $regs[1]),
            (2, true) => matrix_asm!(@ $ins, "x2.trans", $row, $dir, r0 = $regs[0], r1 = $regs[1]),
            (4, false) => matrix_asm!(@ $ins, "x4", $row, $dir,
                r0 = $regs[0], r1 = $regs[1], r2 = $regs[2], r3 = $regs[3]),
            _ => matrix_asm!(@ $ins, "x4.trans", $row, $dir,
                r0 = $regs[0], r1 = $regs[1], r2 = $regs[2], r3 = $regs[3]),
        }
    };
    (@ $ins:ident, $shape:literal, $row:ident, $dir:ident, $r0:ident = $v0:expr $(, $r:ident = $v:expr)*) => {
        asm!(
            concat!(
                "{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; ", stringify!($ins),
                ".sync.aligned.m8n8.", $shape, ".shared.b16 ",
                matrix_asm!(@operands $ins, concat!("{{{", stringify!($r0), "}" $(, ", {", stringify!($r), "}")* , "}}")),
                "; }}"
            ),
            p = in(reg64) $row, $r0 = $dir(reg32) $v0, $($r = $dir(reg32) $v,)*
            options(nostack, preserves_flags)
        )
    };
    (@operands ldmatrix, $list:expr) => { concat!($list, ", [s]") };
    (@operands stmatrix, $list:expr) => { concat!("[s], ", $list) };
}

#[inline(always)]
pub(crate) unsafe fn ldmatrix<const N: usize, const TRANS: bool>(row: *const u16) -> [u32; N] {
    let mut r = [0u32; N];
    // SAFETY: the caller's warp executes this together with valid shared row addresses.
    unsafe { matrix_asm!(ldmatrix, row, out r) }
    r
}

#[inline(always)]
pub(crate) unsafe fn stmatrix<const N: usize, const TRANS: bool>(row: *mut u16, v: [u32; N]) {
    // SAFETY: the caller's warp executes this together with valid shared row addresses.
    unsafe { matrix_asm!(stmatrix, row, in v) }
}

/// `cp.async.{ca,cg}.shared.global [dst], [src], bytes, src_bytes`, with `dst` as a
/// 32-bit shared-window offset (`[%r…]`, [`super::shared_offset`]) and `src` as the
/// generic address it is (a global address is the same number in the generic space, so
/// no `cvta.to.global`). Two 64-bit `cvta`s cost about 9 SASS instructions a copy; this
/// form lets copies at constant distances share one base register.
#[inline(always)]
pub(crate) unsafe fn cp_async<const CG: bool>(
    dst: *mut u8,
    src: *const u8,
    bytes: u32,
    src_bytes: u32,
) {
    let d = super::shared_offset(dst);
    // SAFETY: upheld by the caller (`mma::cp_async_ca`): `dst` is in shared memory, so
    // its offset from the window fits 32 bits.
    unsafe {
        macro_rules! cp {
            ($cache:literal, $n:literal) => {
                asm!(
                    concat!("cp.async.", $cache, ".shared.global [{d}], [{p}], ", $n, ", {z};"),
                    d = in(reg32) d, p = in(reg64) src, z = in(reg32) src_bytes,
                    options(nostack, preserves_flags)
                )
            };
        }
        match (CG, bytes) {
            (true, _) => cp!("cg", "16"),
            (false, 4) => cp!("ca", "4"),
            (false, 8) => cp!("ca", "8"),
            _ => cp!("ca", "16"),
        }
    }
}

#[inline(always)]
pub(crate) fn cp_async_commit_group() {
    // SAFETY: no preconditions.
    unsafe { asm!("cp.async.commit_group;", options(nostack, preserves_flags)) }
}

#[inline(always)]
pub(crate) fn cp_async_wait_group<const N: u32>() {
    // SAFETY: no preconditions; not `nomem`, so shared-memory reads stay after it.
    unsafe { asm!("cp.async.wait_group {n};", n = const N, options(nostack, preserves_flags)) }
}

/// `cp.async.mbarrier.arrive{.noinc}{.shared}.b64 [bar]` (sm_80, PTX 7.0).
#[inline(always)]
pub(crate) unsafe fn cp_async_mbarrier_arrive<const NOINC: bool, const SHARED: bool>(
    bar: *mut u64,
) {
    // SAFETY: upheld by the caller (`async_copy::cp_async_mbarrier_arrive`).
    unsafe {
        match (NOINC, SHARED) {
            (false, false) => asm!("cp.async.mbarrier.arrive.b64 [{b}];", b = in(reg64) bar,
                                   options(nostack, preserves_flags)),
            (true, false) => asm!("cp.async.mbarrier.arrive.noinc.b64 [{b}];", b = in(reg64) bar,
                                  options(nostack, preserves_flags)),
            (false, true) => asm!(
                "{{ .reg .u64 s; cvta.to.shared.u64 s, {b}; cp.async.mbarrier.arrive.shared.b64 [s]; }}",
                b = in(reg64) bar, options(nostack, preserves_flags)),
            (true, true) => asm!(
                "{{ .reg .u64 s; cvta.to.shared.u64 s, {b}; cp.async.mbarrier.arrive.noinc.shared.b64 [s]; }}",
                b = in(reg64) bar, options(nostack, preserves_flags)),
        }
    }
}
