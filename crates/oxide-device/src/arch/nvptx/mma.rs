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

macro_rules! mma16 {
    ($name:ident, $ty:literal) => {
        #[inline(always)]
        pub(crate) unsafe fn $name(c: [f32; 4], a: [u32; 4], b: [u32; 2]) -> [f32; 4] {
            let mut d = c;
            // SAFETY: the caller's whole warp executes this together (`mma` docs).
            unsafe {
                asm!(
                    concat!(
                        "mma.sync.aligned.m16n8k16.row.col.f32.", $ty, ".", $ty, ".f32 ",
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
    };
}

mma16!(mma_m16n8k16_bf16, "bf16");
mma16!(mma_m16n8k16_f16, "f16");

#[inline(always)]
pub(crate) unsafe fn mma_m16n8k8_tf32(c: [f32; 4], a: [u32; 4], b: [u32; 2]) -> [f32; 4] {
    let mut d = c;
    // SAFETY: as `mma_m16n8k16_bf16`.
    unsafe {
        asm!(
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {{{d0}, {d1}, {d2}, {d3}}}, \
             {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};",
            d0 = inout(reg32) d[0], d1 = inout(reg32) d[1],
            d2 = inout(reg32) d[2], d3 = inout(reg32) d[3],
            a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
            b0 = in(reg32) b[0], b1 = in(reg32) b[1],
            options(nomem, nostack, preserves_flags),
        );
    }
    d
}

#[inline(always)]
pub(crate) fn cvt_rna_tf32(x: f32) -> u32 {
    let r: u32;
    // SAFETY: a register conversion.
    unsafe {
        asm!("cvt.rna.tf32.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x,
             options(pure, nomem, nostack, preserves_flags));
    }
    r
}

#[inline(always)]
pub(crate) unsafe fn ldmatrix<const N: usize, const TRANS: bool>(row: *const u16) -> [u32; N] {
    let mut r = [0u32; N];
    // SAFETY: the caller's warp executes this together with valid shared row addresses.
    unsafe {
        match (N, TRANS) {
            (1, false) => asm!(
                "{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; ldmatrix.sync.aligned.m8n8.x1.shared.b16 {{{r0}}}, [s]; }}",
                p = in(reg64) row, r0 = out(reg32) r[0], options(nostack, preserves_flags)),
            (1, true) => asm!(
                "{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {{{r0}}}, [s]; }}",
                p = in(reg64) row, r0 = out(reg32) r[0], options(nostack, preserves_flags)),
            (2, false) => asm!(
                "{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; ldmatrix.sync.aligned.m8n8.x2.shared.b16 {{{r0}, {r1}}}, [s]; }}",
                p = in(reg64) row, r0 = out(reg32) r[0], r1 = out(reg32) r[1], options(nostack, preserves_flags)),
            (2, true) => asm!(
                "{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {{{r0}, {r1}}}, [s]; }}",
                p = in(reg64) row, r0 = out(reg32) r[0], r1 = out(reg32) r[1], options(nostack, preserves_flags)),
            (4, false) => asm!(
                "{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{r0}, {r1}, {r2}, {r3}}}, [s]; }}",
                p = in(reg64) row, r0 = out(reg32) r[0], r1 = out(reg32) r[1],
                r2 = out(reg32) r[2], r3 = out(reg32) r[3], options(nostack, preserves_flags)),
            _ => asm!(
                "{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {{{r0}, {r1}, {r2}, {r3}}}, [s]; }}",
                p = in(reg64) row, r0 = out(reg32) r[0], r1 = out(reg32) r[1],
                r2 = out(reg32) r[2], r3 = out(reg32) r[3], options(nostack, preserves_flags)),
        }
    }
    r
}

#[inline(always)]
pub(crate) unsafe fn stmatrix<const N: usize, const TRANS: bool>(row: *mut u16, v: [u32; N]) {
    // SAFETY: the caller's warp executes this together with valid shared row addresses.
    unsafe {
        match (N, TRANS) {
            (1, false) => asm!(
                "{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; stmatrix.sync.aligned.m8n8.x1.shared.b16 [s], {{{r0}}}; }}",
                p = in(reg64) row, r0 = in(reg32) v[0], options(nostack, preserves_flags)),
            (1, true) => asm!(
                "{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [s], {{{r0}}}; }}",
                p = in(reg64) row, r0 = in(reg32) v[0], options(nostack, preserves_flags)),
            (2, false) => asm!(
                "{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; stmatrix.sync.aligned.m8n8.x2.shared.b16 [s], {{{r0}, {r1}}}; }}",
                p = in(reg64) row, r0 = in(reg32) v[0], r1 = in(reg32) v[1], options(nostack, preserves_flags)),
            (2, true) => asm!(
                "{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [s], {{{r0}, {r1}}}; }}",
                p = in(reg64) row, r0 = in(reg32) v[0], r1 = in(reg32) v[1], options(nostack, preserves_flags)),
            (4, false) => asm!(
                "{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; stmatrix.sync.aligned.m8n8.x4.shared.b16 [s], {{{r0}, {r1}, {r2}, {r3}}}; }}",
                p = in(reg64) row, r0 = in(reg32) v[0], r1 = in(reg32) v[1],
                r2 = in(reg32) v[2], r3 = in(reg32) v[3], options(nostack, preserves_flags)),
            _ => asm!(
                "{{ .reg .u64 s; cvta.to.shared.u64 s, {p}; stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [s], {{{r0}, {r1}, {r2}, {r3}}}; }}",
                p = in(reg64) row, r0 = in(reg32) v[0], r1 = in(reg32) v[1],
                r2 = in(reg32) v[2], r3 = in(reg32) v[3], options(nostack, preserves_flags)),
        }
    }
}

/// `cp.async.{ca,cg}.shared.global [dst], [src], bytes, src_bytes`.
#[inline(always)]
pub(crate) unsafe fn cp_async<const CG: bool>(
    dst: *mut u8,
    src: *const u8,
    bytes: u32,
    src_bytes: u32,
) {
    // SAFETY: upheld by the caller (`mma::cp_async_ca`).
    unsafe {
        macro_rules! cp {
            ($cache:literal, $n:literal) => {
                asm!(
                    concat!("{{ .reg .u64 s, g; cvta.to.shared.u64 s, {d}; cvta.to.global.u64 g, {p}; ",
                            "cp.async.", $cache, ".shared.global [s], [g], ", $n, ", {z}; }}"),
                    d = in(reg64) dst, p = in(reg64) src, z = in(reg32) src_bytes,
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
