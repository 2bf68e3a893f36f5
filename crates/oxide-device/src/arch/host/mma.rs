//! The emulator's tensor-core and async-copy instructions (`mma`'s host backend).
//!
//! Warp-collective instructions exchange the lanes' operands through the block's warp
//! exchange (as shuffles do), then each lane computes its own result. An instruction
//! that needs all 32 lanes refuses a partial warp with a message naming it.
//!
//! `cp.async` copies read their source when issued and write shared memory only when
//! `cp.async.wait_group` retires their group, so a kernel that forgets to wait reads
//! stale data here. Each emulated thread's groups live in a table of the worker OS
//! thread, indexed by the thread's place in its block, cleared when a block starts
//! (copies a thread never waited for cannot be observed by a correct kernel).

use core::cell::RefCell;
use std::collections::VecDeque;
use std::vec::Vec;

use super::block;

fn full_warp(instruction: &str) -> super::rendezvous::Exchange {
    let x = block::exchange(0, u32::MAX);
    if x.arrived != u32::MAX {
        std::panic!(
            "{instruction} needs all 32 lanes of the warp (lanes {:#010x} took part): \
             launch blocks whose size is a multiple of 32 and call it from every lane",
            x.arrived
        );
    }
    x
}

/// Every lane's `N` registers, gathered through warp exchanges (two per exchange).
fn gather<const N: usize>(regs: [u32; N]) -> [[u32; N]; 32] {
    let mut out = [[0u32; N]; 32];
    for pair in (0..N).step_by(2) {
        let hi = if pair + 1 < N { regs[pair + 1] } else { 0 };
        let x = block::exchange(u64::from(regs[pair]) | u64::from(hi) << 32, u32::MAX);
        for (lane, o) in out.iter_mut().enumerate() {
            o[pair] = x.values[lane] as u32;
            if pair + 1 < N {
                o[pair + 1] = (x.values[lane] >> 32) as u32;
            }
        }
    }
    out
}

fn half(reg: u32, h: u32) -> u16 {
    (reg >> (16 * h)) as u16
}

/// `D = A·B + C` for this lane's four outputs: `a(lanes, row, k)` and `b(lanes, k, n)`
/// read one operand element; products and `C` summed in f64, rounded once.
fn mma(
    name: &str,
    c: [f32; 4],
    a: [u32; 4],
    b: [u32; 2],
    k_dim: u32,
    a_at: impl Fn(&[[u32; 4]; 32], u32, u32) -> f64,
    b_at: impl Fn(&[[u32; 2]; 32], u32, u32) -> f64,
) -> [f32; 4] {
    let _ = full_warp(name);
    let (la, lb) = (gather(a), gather(b));
    let lane = super::lane_id();
    core::array::from_fn(|i| {
        let (row, col) = crate::mma::frag_c_coords(lane, i as u32);
        let sum: f64 = (0..k_dim)
            .map(|k| a_at(&la, row, k) * b_at(&lb, k, col))
            .sum();
        (sum + f64::from(c[i])) as f32
    })
}

fn mma16(name: &str, c: [f32; 4], a: [u32; 4], b: [u32; 2], to_f32: fn(u16) -> f32) -> [f32; 4] {
    mma(
        name,
        c,
        a,
        b,
        16,
        // A[row][k]: lane (row % 8)·4 + (k % 8)/2, register row/8 + 2·(k/8), half k % 2.
        |la, row, k| {
            let reg = la[((row % 8) * 4 + (k % 8) / 2) as usize][(row / 8 + 2 * (k / 8)) as usize];
            f64::from(to_f32(half(reg, k % 2)))
        },
        // B[k][n]: lane n·4 + (k % 8)/2, register k/8, half k % 2.
        |lb, k, n| {
            let reg = lb[(n * 4 + (k % 8) / 2) as usize][(k / 8) as usize];
            f64::from(to_f32(half(reg, k % 2)))
        },
    )
}

pub(crate) unsafe fn mma_m16n8k16_bf16(c: [f32; 4], a: [u32; 4], b: [u32; 2]) -> [f32; 4] {
    mma16("mma.sync.m16n8k16.bf16", c, a, b, |h| {
        crate::half::bf16::from_bits(h).to_f32()
    })
}

pub(crate) unsafe fn mma_m16n8k16_f16(c: [f32; 4], a: [u32; 4], b: [u32; 2]) -> [f32; 4] {
    mma16("mma.sync.m16n8k16.f16", c, a, b, |h| {
        crate::half::f16::from_bits(h).to_f32()
    })
}

/// The value the tensor core sees for a tf32 operand: the low 13 bits ignored.
fn tf32(bits: u32) -> f64 {
    f64::from(f32::from_bits(bits & !0x1fff))
}

pub(crate) unsafe fn mma_m16n8k8_tf32(c: [f32; 4], a: [u32; 4], b: [u32; 2]) -> [f32; 4] {
    mma(
        "mma.sync.m16n8k8.tf32",
        c,
        a,
        b,
        8,
        // A[row][k]: lane (row % 8)·4 + k % 4, register row/8 + 2·(k/4).
        |la, row, k| tf32(la[((row % 8) * 4 + k % 4) as usize][(row / 8 + 2 * (k / 4)) as usize]),
        // B[k][n]: lane n·4 + k % 4, register k/4.
        |lb, k, n| tf32(lb[(n * 4 + k % 4) as usize][(k / 4) as usize]),
    )
}

pub(crate) fn cvt_rna_tf32(x: f32) -> u32 {
    let bits = x.to_bits();
    if x.is_nan() || x.is_infinite() {
        return bits & !0x1fff | if x.is_nan() { 0x2000 } else { 0 };
    }
    // Nearest, ties away from zero: add half an ulp of tf32 to the magnitude, truncate.
    (bits + 0x1000) & !0x1fff
}

/// Row addresses of the lanes that supply them (`8·N`), checked for alignment.
fn row_addresses(name: &str, x: &super::rendezvous::Exchange, matrices: usize) -> [usize; 32] {
    let mut rows = [0usize; 32];
    for (l, r) in rows.iter_mut().enumerate().take(8 * matrices) {
        *r = x.values[l] as usize;
        if !r.is_multiple_of(16) {
            std::panic!(
                "{name}: lane {l} passed row address {:#x}, not 16-byte aligned",
                *r
            );
        }
    }
    rows
}

pub(crate) unsafe fn ldmatrix<const N: usize, const TRANS: bool>(row: *const u16) -> [u32; N] {
    let name = if TRANS { "ldmatrix.trans" } else { "ldmatrix" };
    let _ = full_warp(name);
    let x = block::exchange(row as u64, u32::MAX);
    let rows = row_addresses(name, &x, N);
    let lane = super::lane_id() as usize;
    let read = |addr: usize| -> u16 {
        // SAFETY: the caller promised 16 readable bytes at each row address.
        unsafe { (addr as *const u16).read() }
    };
    core::array::from_fn(|i| {
        let (r, c) = (lane / 4, 2 * (lane % 4));
        if TRANS {
            // Elements (c, r) and (c + 1, r) of matrix i.
            let lo = read(rows[8 * i + c] + 2 * r);
            let hi = read(rows[8 * i + c + 1] + 2 * r);
            crate::mma::pack2(lo, hi)
        } else {
            crate::mma::pack2(
                read(rows[8 * i + r] + 2 * c),
                read(rows[8 * i + r] + 2 * c + 2),
            )
        }
    })
}

pub(crate) unsafe fn stmatrix<const N: usize, const TRANS: bool>(row: *mut u16, v: [u32; N]) {
    let name = if TRANS { "stmatrix.trans" } else { "stmatrix" };
    let _ = full_warp(name);
    let x = block::exchange(row as u64, u32::MAX);
    let rows = row_addresses(name, &x, N);
    let regs = gather(v);
    let lane = super::lane_id() as usize;
    if lane >= 8 * N {
        return;
    }
    // This lane writes the row it supplied: row r of matrix i.
    let (i, r) = (lane / 8, lane % 8);
    for c in 0..8 {
        let value = if TRANS {
            // M[r][c] is element (r % 2) of lane 4c + r/2's register i.
            half(regs[4 * c + r / 2][i], (r % 2) as u32)
        } else {
            // M[r][c] is element (c % 2) of lane 4r + c/2's register i.
            half(regs[4 * r + c / 2][i], (c % 2) as u32)
        };
        // SAFETY: the caller promised 16 writable bytes at each row address.
        unsafe { ((rows[lane] + 2 * c) as *mut u16).write(value) };
    }
}

/// One issued copy: its destination and the bytes it will write there.
struct Copy {
    dst: *mut u8,
    bytes: [u8; 16],
    len: usize,
}

#[derive(Default)]
struct Groups {
    open: Vec<Copy>,
    committed: VecDeque<Vec<Copy>>,
}

std::thread_local! {
    static GROUPS: RefCell<Vec<Groups>> = const { RefCell::new(Vec::new()) };
}

/// `f` on this thread's groups. Uninterruptible: the table outlives the launch, and a
/// thread stopped while it holds it (or the allocator) would leave it held.
fn with_groups<R>(f: impl FnOnce(&mut Groups) -> R) -> R {
    let c = super::thread_coords();
    let t = (c.thread_idx[0]
        + c.block_dim[0] * (c.thread_idx[1] + c.block_dim[1] * c.thread_idx[2]))
        as usize;
    super::uninterruptible(|| {
        GROUPS.with(|g| {
            let mut g = g.borrow_mut();
            if g.len() <= t {
                g.resize_with(t + 1, Groups::default);
            }
            f(&mut g[t])
        })
    })
}

/// Forget every thread's pending copies: a new block starts on this worker.
pub(crate) fn reset_async_copies() {
    GROUPS.with(|g| g.borrow_mut().clear());
}

pub(crate) unsafe fn cp_async<const CG: bool>(
    dst: *mut u8,
    src: *const u8,
    bytes: u32,
    src_bytes: u32,
) {
    let name = if CG { "cp.async.cg" } else { "cp.async.ca" };
    let (len, read) = (bytes as usize, src_bytes.min(bytes) as usize);
    if !(dst as usize).is_multiple_of(len) || (read > 0 && !(src as usize).is_multiple_of(len)) {
        std::panic!("{name}: addresses {dst:p} <- {src:p} are not {len}-byte aligned");
    }
    let mut copy = Copy {
        dst,
        bytes: [0; 16],
        len,
    };
    // SAFETY: the caller promised `src_bytes` readable bytes at `src`.
    unsafe { core::ptr::copy_nonoverlapping(src, copy.bytes.as_mut_ptr(), read) };
    with_groups(|g| g.open.push(copy));
}

pub(crate) fn cp_async_commit_group() {
    with_groups(|g| {
        let group = core::mem::take(&mut g.open);
        g.committed.push_back(group);
    });
}

pub(crate) fn cp_async_wait_group<const N: u32>() {
    let retired: Vec<Vec<Copy>> = with_groups(|g| {
        let keep = (N as usize).min(g.committed.len());
        let done = g.committed.len() - keep;
        g.committed.drain(..done).collect()
    });
    for c in retired.iter().flatten() {
        // SAFETY: `cp_async`'s caller promised `len` writable shared bytes at `dst`.
        unsafe { core::ptr::copy_nonoverlapping(c.bytes.as_ptr(), c.dst, c.len) };
    }
}

pub(crate) unsafe fn cp_async_mbarrier_arrive<const NOINC: bool, const SHARED: bool>(
    _bar: *mut u64,
) {
    mbarrier_not_emulated(match (NOINC, SHARED) {
        (false, false) => "cp.async.mbarrier.arrive",
        (true, false) => "cp.async.mbarrier.arrive.noinc",
        (false, true) => "cp.async.mbarrier.arrive.shared",
        (true, true) => "cp.async.mbarrier.arrive.noinc.shared",
    })
}

// ---- sm_90 warpgroup, mbarrier and bulk-copy instructions: refused -----------------------------

fn not_emulated(instruction: &str) -> ! {
    refuse(
        instruction,
        "sm_90's asynchronous warpgroup/tensor-memory engines",
        "on an sm_90 GPU, or use mma.sync (oxide_device::mma), which the emulator runs",
    )
}

/// mbarrier's sm_80 forms and cp.async's arrivals on one: refused too (the emulator has
/// no model of a barrier's phases and asynchronous arrivals), but an sm_80 GPU runs them.
fn mbarrier_not_emulated(instruction: &str) -> ! {
    refuse(
        instruction,
        "mbarrier's phases and asynchronous arrivals",
        "on an sm_80 or newer GPU, or synchronise the block with thread::sync_threads, \
         which the emulator runs",
    )
}

pub(super) fn refuse(instruction: &str, no_model_of: &str, run: &str) -> ! {
    std::panic!(
        "{instruction} is not emulated: the CPU emulator has no model of {no_model_of}, and \
         will not guess. Run this kernel {run}"
    )
}

pub(crate) fn wgmma_fence() {
    not_emulated("wgmma.fence")
}

pub(crate) fn wgmma_commit_group() {
    not_emulated("wgmma.commit_group")
}

pub(crate) fn wgmma_wait_group<const N: u32>() {
    not_emulated("wgmma.wait_group")
}

pub(crate) fn wgmma_wait_group_acc128<const N: u32>(_acc: &mut [f32; 128]) {
    not_emulated("wgmma.wait_group")
}

pub(crate) fn wgmma_wait_group_acc32<const N: u32>(_acc: &mut [f32; 32]) {
    not_emulated("wgmma.wait_group")
}

pub(crate) unsafe fn wgmma_m64n64k16_bf16<const TRANS_A: u32, const TRANS_B: u32>(
    _acc: &mut [f32; 32],
    _desc_a: u64,
    _desc_b: u64,
    _accumulate: bool,
) {
    not_emulated("wgmma.mma_async")
}

pub(crate) unsafe fn wgmma_m64n256k16_bf16<const TRANS_A: u32, const TRANS_B: u32>(
    _acc: &mut [f32; 128],
    _desc_a: u64,
    _desc_b: u64,
    _accumulate: bool,
) {
    not_emulated("wgmma.mma_async")
}

pub(crate) fn setmaxnreg_inc<const N: u32>() {
    not_emulated("setmaxnreg.inc")
}

pub(crate) fn setmaxnreg_dec<const N: u32>() {
    not_emulated("setmaxnreg.dec")
}

pub(crate) fn shared_addr<T>(_p: *const T) -> u32 {
    not_emulated("a wgmma shared-memory descriptor (cvta.to.shared)")
}

pub(crate) unsafe fn mbarrier_init(_bar: *mut u64, _count: u32) {
    mbarrier_not_emulated("mbarrier.init")
}

pub(crate) unsafe fn mbarrier_inval(_bar: *mut u64) {
    mbarrier_not_emulated("mbarrier.inval")
}

pub(crate) unsafe fn mbarrier_test_wait(_bar: *mut u64, _token: u64) -> bool {
    mbarrier_not_emulated("mbarrier.test_wait")
}

pub(crate) unsafe fn mbarrier_try_wait(_bar: *mut u64, _token: u64) -> bool {
    not_emulated("mbarrier.try_wait")
}

pub(crate) unsafe fn mbarrier_arrive(_bar: *mut u64) -> u64 {
    mbarrier_not_emulated("mbarrier.arrive")
}

pub(crate) unsafe fn mbarrier_arrive_expect_tx(_bar: *mut u64, _bytes: u32) -> u64 {
    not_emulated("mbarrier.arrive.expect_tx")
}

pub(crate) unsafe fn mbarrier_try_wait_parity(_bar: *mut u64, _parity: u32) -> bool {
    not_emulated("mbarrier.try_wait.parity")
}

pub(crate) unsafe fn cp_async_bulk_tensor_2d_g2s(
    _dst: *mut u8,
    _tensor_map: *const u8,
    _x: i32,
    _y: i32,
    _bar: *mut u64,
) {
    not_emulated("cp.async.bulk.tensor (TMA)")
}

pub(crate) unsafe fn cp_async_bulk_tensor_2d_s2g(
    _src: *const u8,
    _tensor_map: *const u8,
    _x: i32,
    _y: i32,
) {
    not_emulated("cp.async.bulk.tensor store (TMA)")
}

pub(crate) unsafe fn prefetch_tensormap(_tensor_map: *const u8) {
    not_emulated("prefetch.tensormap")
}

pub(crate) fn cp_async_bulk_commit_group() {
    not_emulated("cp.async.bulk.commit_group")
}

pub(crate) fn cp_async_bulk_wait_group<const N: u32>() {
    not_emulated("cp.async.bulk.wait_group")
}

pub(crate) fn cp_async_bulk_wait_group_read<const N: u32>() {
    not_emulated("cp.async.bulk.wait_group.read")
}

pub(crate) unsafe fn named_barrier_sync(_id: u32, _threads: u32) {
    not_emulated("barrier.sync with a named barrier")
}

pub(crate) fn fence_proxy_async_shared() {
    not_emulated("fence.proxy.async")
}
