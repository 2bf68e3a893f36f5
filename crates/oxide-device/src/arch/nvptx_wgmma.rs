//! GPU backend of `wgmma`: the sm_90 warpgroup and bulk-copy instructions as inline
//! PTX (LLVM 22 has no `wgmma` intrinsic). As in `nvptx_mma`, nothing here is `pure`.

use core::arch::asm;

#[inline(always)]
pub(crate) fn wgmma_fence() {
    // SAFETY: the caller's warpgroup executes it together (`wgmma` docs).
    unsafe {
        asm!(
            "wgmma.fence.sync.aligned;",
            options(nostack, preserves_flags)
        )
    }
}

#[inline(always)]
pub(crate) fn wgmma_commit_group() {
    // SAFETY: as `wgmma_fence`.
    unsafe {
        asm!(
            "wgmma.commit_group.sync.aligned;",
            options(nostack, preserves_flags)
        )
    }
}

#[inline(always)]
pub(crate) fn wgmma_wait_group<const N: u32>() {
    // SAFETY: as `wgmma_fence`.
    unsafe {
        asm!("wgmma.wait_group.sync.aligned {n};", n = const N, options(nostack, preserves_flags))
    }
}

#[inline(always)]
pub(crate) unsafe fn wgmma_m64n64k16_bf16<const TRANS_A: u32, const TRANS_B: u32>(
    acc: &mut [f32; 32],
    desc_a: u64,
    desc_b: u64,
    accumulate: bool,
) {
    // SAFETY: upheld by the caller (`wgmma::wgmma_m64n64k16_f32_bf16`).
    unsafe {
        asm!(
            concat!(
                "{{ .reg .pred p; setp.ne.b32 p, {sd}, 0; ",
                "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 ",
                "{{{d0}, {d1}, {d2}, {d3}, {d4}, {d5}, {d6}, {d7}, {d8}, {d9}, {d10}, {d11}, {d12}, {d13}, {d14}, {d15}, {d16}, {d17}, {d18}, {d19}, {d20}, {d21}, {d22}, {d23}, {d24}, {d25}, {d26}, {d27}, {d28}, {d29}, {d30}, {d31}}}, {da}, {db}, p, 1, 1, {ta}, {tb}; }}"
            ),
                    d0 = inout(reg32) acc[0],
                    d1 = inout(reg32) acc[1],
                    d2 = inout(reg32) acc[2],
                    d3 = inout(reg32) acc[3],
                    d4 = inout(reg32) acc[4],
                    d5 = inout(reg32) acc[5],
                    d6 = inout(reg32) acc[6],
                    d7 = inout(reg32) acc[7],
                    d8 = inout(reg32) acc[8],
                    d9 = inout(reg32) acc[9],
                    d10 = inout(reg32) acc[10],
                    d11 = inout(reg32) acc[11],
                    d12 = inout(reg32) acc[12],
                    d13 = inout(reg32) acc[13],
                    d14 = inout(reg32) acc[14],
                    d15 = inout(reg32) acc[15],
                    d16 = inout(reg32) acc[16],
                    d17 = inout(reg32) acc[17],
                    d18 = inout(reg32) acc[18],
                    d19 = inout(reg32) acc[19],
                    d20 = inout(reg32) acc[20],
                    d21 = inout(reg32) acc[21],
                    d22 = inout(reg32) acc[22],
                    d23 = inout(reg32) acc[23],
                    d24 = inout(reg32) acc[24],
                    d25 = inout(reg32) acc[25],
                    d26 = inout(reg32) acc[26],
                    d27 = inout(reg32) acc[27],
                    d28 = inout(reg32) acc[28],
                    d29 = inout(reg32) acc[29],
                    d30 = inout(reg32) acc[30],
                    d31 = inout(reg32) acc[31],
            da = in(reg64) desc_a, db = in(reg64) desc_b, sd = in(reg32) accumulate as u32,
            ta = const TRANS_A, tb = const TRANS_B,
            options(nostack, preserves_flags),
        );
    }
}

/// The shared-state-space address of a generic pointer into shared memory.
#[inline(always)]
pub(crate) fn shared_addr<T>(p: *const T) -> u32 {
    let a: u64;
    // SAFETY: an address conversion.
    unsafe {
        asm!("cvta.to.shared.u64 {a}, {p};", a = out(reg64) a, p = in(reg64) p,
             options(pure, nomem, nostack, preserves_flags));
    }
    a as u32
}

#[inline(always)]
pub(crate) unsafe fn mbarrier_init(bar: *mut u64, count: u32) {
    // SAFETY: `bar` is an 8-byte-aligned shared word (caller).
    unsafe {
        asm!("mbarrier.init.shared::cta.b64 [{b}], {c};", b = in(reg32) shared_addr(bar),
             c = in(reg32) count, options(nostack, preserves_flags));
    }
}

#[inline(always)]
pub(crate) unsafe fn mbarrier_arrive(bar: *mut u64) -> u64 {
    let state: u64;
    // SAFETY: as `mbarrier_init`, initialised.
    unsafe {
        asm!("mbarrier.arrive.shared::cta.b64 {s}, [{b}];", s = out(reg64) state,
             b = in(reg32) shared_addr(bar), options(nostack, preserves_flags));
    }
    state
}

#[inline(always)]
pub(crate) unsafe fn mbarrier_arrive_expect_tx(bar: *mut u64, bytes: u32) -> u64 {
    let state: u64;
    // SAFETY: as `mbarrier_arrive`.
    unsafe {
        asm!("mbarrier.arrive.expect_tx.shared::cta.b64 {s}, [{b}], {n};", s = out(reg64) state,
             b = in(reg32) shared_addr(bar), n = in(reg32) bytes, options(nostack, preserves_flags));
    }
    state
}

#[inline(always)]
pub(crate) unsafe fn mbarrier_try_wait_parity(bar: *mut u64, parity: u32) -> bool {
    let done: u32;
    // SAFETY: as `mbarrier_arrive`.
    unsafe {
        asm!("{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {q}; selp.u32 {d}, 1, 0, p; }}",
             d = out(reg32) done, b = in(reg32) shared_addr(bar), q = in(reg32) parity,
             options(nostack, preserves_flags));
    }
    done != 0
}

#[inline(always)]
pub(crate) unsafe fn cp_async_bulk_tensor_2d_g2s(
    dst: *mut u8,
    tensor_map: *const u8,
    x: i32,
    y: i32,
    bar: *mut u64,
) {
    // SAFETY: upheld by the caller (`wgmma::cp_async_bulk_tensor_2d_global_to_shared`).
    unsafe {
        asm!("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}}}], [{b}];",
             d = in(reg32) shared_addr(dst), m = in(reg64) tensor_map, x = in(reg32) x, y = in(reg32) y,
             b = in(reg32) shared_addr(bar), options(nostack, preserves_flags));
    }
}

#[inline(always)]
pub(crate) fn fence_proxy_async_shared() {
    // SAFETY: a fence.
    unsafe {
        asm!(
            "fence.proxy.async.shared::cta;",
            options(nostack, preserves_flags)
        )
    }
}
