//! GPU backend of `cluster` (sm_90+): the cluster's special registers, its barrier,
//! `mapa` and distributed shared memory, and the multicast TMA load, as inline PTX.
//!
//! Everything is spelled in PTX ISA 7.8, which LLVM 22 writes for plain `sm_90`: the
//! barrier's explicit `.release`/`.acquire`/`.relaxed` qualifiers need PTX 8.0, so the
//! unqualified forms (release on arrive, acquire on wait, by the ISA's definition) are
//! used. The fence and DSMEM blocks have no `nomem`, so each is a compiler barrier for
//! memory.

use core::arch::asm;

use super::shared_addr;

macro_rules! cluster_registers {
    ($($name:ident => $reg:literal;)*) => {$(
        #[inline(always)]
        pub(crate) fn $name() -> u32 {
            let r: u32;
            // SAFETY: reads a special register, constant for the kernel's lifetime.
            unsafe {
                asm!(concat!("mov.u32 {r}, ", $reg, ";"), r = out(reg32) r,
                     options(pure, nomem, nostack, preserves_flags));
            }
            r
        }
    )*};
}

with_cluster_registers!(cluster_registers);

#[inline(always)]
pub(crate) fn is_explicit_cluster() -> bool {
    let r: u32;
    // SAFETY: reads a special register (a predicate), constant for the kernel.
    unsafe {
        asm!("{{ .reg .pred p; mov.pred p, %is_explicit_cluster; selp.u32 {r}, 1, 0, p; }}",
             r = out(reg32) r, options(pure, nomem, nostack, preserves_flags));
    }
    r != 0
}

// The cluster barrier through LLVM's intrinsics, not `asm!`: they are `convergent`
// (an `asm!` block is not, and LLVM duplicated one into both arms of an `if` on the
// thread index, which the `.aligned` forms forbid) and not `nomem`, so no memory access
// moves across them.
unsafe extern "C" {
    #[link_name = "llvm.nvvm.barrier.cluster.arrive"]
    fn barrier_cluster_arrive_intrinsic();
    #[link_name = "llvm.nvvm.barrier.cluster.arrive.aligned"]
    fn barrier_cluster_arrive_aligned_intrinsic();
    #[link_name = "llvm.nvvm.barrier.cluster.wait"]
    fn barrier_cluster_wait_intrinsic();
    #[link_name = "llvm.nvvm.barrier.cluster.wait.aligned"]
    fn barrier_cluster_wait_aligned_intrinsic();
}

macro_rules! cluster_barriers {
    ($($name:ident => $intrinsic:ident;)*) => {$(
        #[inline(always)]
        pub(crate) unsafe fn $name() {
            // SAFETY: upheld by the caller (`cluster`'s docs): every thread of the
            // cluster arrives once, then waits.
            unsafe { $intrinsic() }
        }
    )*};
}

cluster_barriers! {
    barrier_cluster_arrive => barrier_cluster_arrive_intrinsic;
    barrier_cluster_arrive_aligned => barrier_cluster_arrive_aligned_intrinsic;
    barrier_cluster_wait => barrier_cluster_wait_intrinsic;
    barrier_cluster_wait_aligned => barrier_cluster_wait_aligned_intrinsic;
}

#[inline(always)]
pub(crate) unsafe fn fence_acq_rel_cluster() {
    // SAFETY: a fence; without `nomem`, a compiler barrier for memory too.
    unsafe { asm!("fence.acq_rel.cluster;", options(nostack, preserves_flags)) }
}

#[inline(always)]
pub(crate) unsafe fn mapa_generic(p: *const u8, rank: u32) -> *const u8 {
    let out: *const u8;
    // SAFETY: an address computation; the caller vouches for `p` and `rank`.
    unsafe {
        asm!("mapa.u64 {o}, {p}, {r};", o = out(reg64) out, p = in(reg64) p, r = in(reg32) rank,
             options(pure, nomem, nostack, preserves_flags));
    }
    out
}

/// The `.shared::cluster` address of the `.shared::cta` address `p` in block `rank`.
#[inline(always)]
fn mapa_shared(p: *const u8, rank: u32) -> u32 {
    let cta = shared_addr(p);
    let out: u32;
    // SAFETY: an address computation.
    unsafe {
        asm!("mapa.shared::cluster.u32 {o}, {a}, {r};", o = out(reg32) out, a = in(reg32) cta,
             r = in(reg32) rank, options(pure, nomem, nostack, preserves_flags));
    }
    out
}

#[inline(always)]
pub(crate) unsafe fn dsmem_read_u32(p: *const u32, rank: u32) -> u32 {
    let v: u32;
    // SAFETY: upheld by the caller (`cluster::dsmem_read_u32`).
    unsafe {
        asm!("ld.shared::cluster.u32 {v}, [{a}];", v = out(reg32) v,
             a = in(reg32) mapa_shared(p.cast(), rank), options(nostack, preserves_flags));
    }
    v
}

#[inline(always)]
pub(crate) unsafe fn dsmem_read_f32x4(p: *const f32, rank: u32) -> [f32; 4] {
    let (v0, v1, v2, v3): (f32, f32, f32, f32);
    // SAFETY: upheld by the caller (`cluster::dsmem_read_f32x4`). `readonly`: it writes
    // nothing, so independent reads may be scheduled together; it still does not move
    // across the cluster barrier (an intrinsic that may write memory).
    unsafe {
        asm!("ld.shared::cluster.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];", a = out(reg32) v0,
             b = out(reg32) v1, c = out(reg32) v2, d = out(reg32) v3,
             p = in(reg32) mapa_shared(p.cast(), rank), options(readonly, nostack, preserves_flags));
    }
    [v0, v1, v2, v3]
}

#[inline(always)]
pub(crate) unsafe fn dsmem_write_u32(p: *mut u32, rank: u32, v: u32) {
    // SAFETY: upheld by the caller (`cluster::dsmem_write_u32`).
    unsafe {
        asm!("st.shared::cluster.u32 [{a}], {v};", a = in(reg32) mapa_shared(p.cast(), rank),
             v = in(reg32) v, options(nostack, preserves_flags));
    }
}

#[inline(always)]
pub(crate) unsafe fn cp_async_bulk_tensor_2d_g2s_multicast(
    dst: *mut u8,
    tensor_map: *const u8,
    x: i32,
    y: i32,
    bar: *mut u64,
    cta_mask: u16,
) {
    // SAFETY: upheld by the caller (`tma::cp_async_bulk_tensor_2d_g2s_multicast`).
    unsafe {
        asm!("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [{d}], [{m}, {{{x}, {y}}}], [{b}], {k};",
             d = in(reg32) shared_addr(dst), m = in(reg64) tensor_map, x = in(reg32) x,
             y = in(reg32) y, b = in(reg32) shared_addr(bar), k = in(reg16) cta_mask,
             options(nostack, preserves_flags));
    }
}
