//! Tensor cores and the asynchronous copies that feed them: warp-level
//! `mma.sync` (sm_80+), `ldmatrix` (sm_75+), `stmatrix` (sm_90+) and `cp.async`
//! (sm_80+) with its commit/wait groups. Names follow NVIDIA cuda-oxide's `wmma`
//! module (`mma_m16n8k16_f32_bf16`, `ldmatrix_x4`, …).
//!
//! # Fragments
//!
//! A warp computes `D = A·B + C` for one `m16n8k16` tile (`m16n8k8` for tf32); each
//! lane holds a fixed piece of A, B and C in registers, packed as PTX does (two 16-bit
//! values per `u32`, the lower-indexed element in the low half). With
//! `g = lane / 4` and `t = lane % 4`:
//!
//! | fragment | registers | element of register `i` (half `h` = 0 low, 1 high) |
//! |---|---|---|
//! | A 16×16, 16-bit ([`FragA16`]) | 4 × u32 | row `g + 8·(i % 2)`, col `2t + h + 8·(i / 2)` |
//! | B 16×8, 16-bit ([`FragB16`]) | 2 × u32 | row (k) `2t + h + 8·i`, col (n) `g` |
//! | C/D 16×8, f32 ([`FragC`]) | 4 × f32 | row `g + 8·(i / 2)`, col `2t + i % 2` |
//! | A 16×8, tf32 ([`FragATf32`]) | 4 × u32 | row `g + 8·(i % 2)`, col `t + 4·(i / 2)` |
//! | B 8×8, tf32 ([`FragBTf32`]) | 2 × u32 | row (k) `t + 4·i`, col (n) `g` |
//!
//! [`frag_a16_coords`], [`frag_b16_coords`] and [`frag_c_coords`] compute these, so a
//! kernel (or a test) never re-derives them. A is row-major and B column-major in
//! the instruction's terms (`.row.col`): B's fragment holds consecutive k of one n.
//!
//! [`ldmatrix_x4`] loads exactly an A fragment from a row-major 16×16 tile in shared
//! memory when lane `l` passes the address of row `l % 16`, column `8·(l / 16)`;
//! [`ldmatrix_x2_trans`] loads a B fragment from a row-major (k×n) 16×8 tile when lane
//! `l` (of 0..16) passes row `l`.
//!
//! # Every lane, same call
//!
//! All of these are warp-collective (`.sync.aligned`): all 32 lanes of the warp must
//! execute the same call, converged, with no lane exited. Hence `unsafe`.
//!
//! # On the host
//!
//! The CPU emulator runs all of them over its 32-lane warps. `mma` sums each output's
//! products (exact for 16-bit and tf32 inputs) and `C` in `f64` and rounds once to
//! `f32`; the GPU's summation order inside one instruction is unspecified, so results
//! can differ in the last bits of `f32`. tf32 operands use the top 19 bits of the
//! `f32` (the rest ignored, as the hardware does); [`cvt_rna_tf32`] rounds first.
//! `cp.async` copies are held per thread and land in shared memory only when
//! [`cp_async_wait_group`] retires their group, so a kernel that reads a tile
//! before waiting for it sees stale data on the emulator too (on a GPU it might not).

use crate::arch;

/// One lane's piece of a 16×16 A tile of 16-bit values (f16 or bf16) for
/// `mma.m16n8k16`; layout in the module docs.
pub type FragA16 = [u32; 4];
/// One lane's piece of a 16×8 B tile (k×n) of 16-bit values for `mma.m16n8k16`.
pub type FragB16 = [u32; 2];
/// One lane's piece of a 16×8 f32 accumulator (C and D).
pub type FragC = [f32; 4];
/// One lane's piece of a 16×8 A tile of tf32 values for `mma.m16n8k8`.
pub type FragATf32 = [u32; 4];
/// One lane's piece of an 8×8 B tile (k×n) of tf32 values for `mma.m16n8k8`.
pub type FragBTf32 = [u32; 2];

/// (row, col) of the two elements (low half, high half) of register `reg` of a
/// [`FragA16`] held by `lane`.
#[inline(always)]
pub const fn frag_a16_coords(lane: u32, reg: u32) -> [(u32, u32); 2] {
    let (g, t) = (lane / 4, lane % 4);
    let (row, col) = (g + 8 * (reg % 2), 2 * t + 8 * (reg / 2));
    [(row, col), (row, col + 1)]
}

/// (k, n) of the two elements of register `reg` of a [`FragB16`] held by `lane`.
#[inline(always)]
pub const fn frag_b16_coords(lane: u32, reg: u32) -> [(u32, u32); 2] {
    let (g, t) = (lane / 4, lane % 4);
    let k = 2 * t + 8 * reg;
    [(k, g), (k + 1, g)]
}

/// (row, col) of element `i` of a [`FragC`] held by `lane`.
#[inline(always)]
pub const fn frag_c_coords(lane: u32, i: u32) -> (u32, u32) {
    let (g, t) = (lane / 4, lane % 4);
    (g + 8 * (i / 2), 2 * t + i % 2)
}

/// (row, col) of register `reg` of a [`FragATf32`] held by `lane`.
#[inline(always)]
pub const fn frag_a_tf32_coords(lane: u32, reg: u32) -> (u32, u32) {
    let (g, t) = (lane / 4, lane % 4);
    (g + 8 * (reg % 2), t + 4 * (reg / 2))
}

/// (k, n) of register `reg` of a [`FragBTf32`] held by `lane`.
#[inline(always)]
pub const fn frag_b_tf32_coords(lane: u32, reg: u32) -> (u32, u32) {
    let (g, t) = (lane / 4, lane % 4);
    (t + 4 * reg, g)
}

/// Two 16-bit values in one register, `lo` in the low half (the fragments' packing).
#[inline(always)]
pub const fn pack2(lo: u16, hi: u16) -> u32 {
    lo as u32 | (hi as u32) << 16
}

/// `D = A·B + C`, bf16 inputs, f32 accumulate:
/// `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32` (sm_80+).
///
/// # Safety
/// All 32 lanes of the warp execute this call together, converged.
#[inline(always)]
pub unsafe fn mma_m16n8k16_f32_bf16(c: FragC, a: FragA16, b: FragB16) -> FragC {
    // SAFETY: upheld by the caller.
    unsafe { arch::mma_m16n8k16_bf16(c, a, b) }
}

/// `D = A·B + C`, f16 inputs, f32 accumulate:
/// `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32` (sm_80+).
///
/// # Safety
/// As [`mma_m16n8k16_f32_bf16`].
#[inline(always)]
pub unsafe fn mma_m16n8k16_f32_f16(c: FragC, a: FragA16, b: FragB16) -> FragC {
    // SAFETY: upheld by the caller.
    unsafe { arch::mma_m16n8k16_f16(c, a, b) }
}

/// `D = A·B + C`, tf32 inputs (the top 19 bits of each f32's bit pattern), f32
/// accumulate: `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32` (sm_80+).
///
/// # Safety
/// As [`mma_m16n8k16_f32_bf16`].
#[inline(always)]
pub unsafe fn mma_m16n8k8_f32_tf32(c: FragC, a: FragATf32, b: FragBTf32) -> FragC {
    // SAFETY: upheld by the caller.
    unsafe { arch::mma_m16n8k8_tf32(c, a, b) }
}

/// `cvt.rna.tf32.f32`: `x` rounded to tf32 (nearest, ties away from zero), as the
/// bit pattern of an f32 whose low 13 bits are zero.
#[inline(always)]
pub fn cvt_rna_tf32(x: f32) -> u32 {
    arch::cvt_rna_tf32(x)
}

macro_rules! ldmatrix_fns {
    ($($(#[$doc:meta])* $name:ident => $n:literal, $trans:literal;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// All 32 lanes call it together; each lane that supplies a row address (lanes
        /// `0..8·N`) passes a pointer into shared memory, 16-byte aligned, with 16
        /// readable bytes that no thread writes concurrently. Other lanes' pointers are
        /// ignored (any value).
        #[inline(always)]
        pub unsafe fn $name(row: *const u16) -> [u32; $n] {
            // SAFETY: upheld by the caller.
            unsafe { arch::ldmatrix::<$n, $trans>(row) }
        }
    )*};
}

ldmatrix_fns! {
    /// `ldmatrix.sync.aligned.m8n8.x1.shared.b16`: one 8×8 matrix of 16-bit values whose
    /// row `r` lane `r` points at; lane `l` gets row `l / 4`, columns `2(l % 4)`, `+1`.
    ldmatrix_x1 => 1, false;
    /// `ldmatrix….x2`: two matrices, rows from lanes 0–7 and 8–15; register `i` holds
    /// matrix `i` as in [`ldmatrix_x1`].
    ldmatrix_x2 => 2, false;
    /// `ldmatrix….x4`: four matrices, rows from lanes `8i..8i+8` for matrix `i`.
    ldmatrix_x4 => 4, false;
    /// `ldmatrix….x1.trans`: as [`ldmatrix_x1`], transposed: lane `l` gets rows
    /// `2(l % 4)`, `+1` of column `l / 4`.
    ldmatrix_x1_trans => 1, true;
    /// `ldmatrix….x2.trans`.
    ldmatrix_x2_trans => 2, true;
    /// `ldmatrix….x4.trans`.
    ldmatrix_x4_trans => 4, true;
}

macro_rules! stmatrix_fns {
    ($($(#[$doc:meta])* $name:ident => $n:literal, $trans:literal;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// All 32 lanes call it together; lanes `0..8·N` pass 16-byte-aligned pointers
        /// into shared memory with 16 writable bytes that no other thread accesses
        /// concurrently. Requires sm_90.
        #[inline(always)]
        pub unsafe fn $name(row: *mut u16, regs: [u32; $n]) {
            // SAFETY: upheld by the caller.
            unsafe { arch::stmatrix::<$n, $trans>(row, regs) }
        }
    )*};
}

stmatrix_fns! {
    /// `stmatrix.sync.aligned.m8n8.x1.shared.b16`: the inverse of [`ldmatrix_x1`].
    stmatrix_x1 => 1, false;
    /// `stmatrix….x2`: the inverse of [`ldmatrix_x2`].
    stmatrix_x2 => 2, false;
    /// `stmatrix….x4`: the inverse of [`ldmatrix_x4`].
    stmatrix_x4 => 4, false;
    /// `stmatrix….x1.trans`: the inverse of [`ldmatrix_x1_trans`].
    stmatrix_x1_trans => 1, true;
    /// `stmatrix….x2.trans`.
    stmatrix_x2_trans => 2, true;
    /// `stmatrix….x4.trans`.
    stmatrix_x4_trans => 4, true;
}

/// `cp.async.ca.shared.global` of `size_of::<T>()` bytes (4, 8 or 16; checked at
/// compile time): an asynchronous copy from global to shared memory, cached in L1
/// and L2. It joins the thread's open group; see [`cp_async_commit_group`].
///
/// # Safety
/// `dst` points into shared memory and `src` into global memory, both aligned to
/// `size_of::<T>()`, valid for that many bytes; nothing reads `dst` before the
/// copy's group is waited for, nor writes it meanwhile.
#[inline(always)]
pub unsafe fn cp_async_ca<T: Copy>(dst: *mut T, src: *const T) {
    // SAFETY: upheld by the caller (`src` valid for the whole `T`).
    unsafe { cp_async_ca_zfill(dst, src, core::mem::size_of::<T>() as u32) }
}

/// `cp.async.cg.shared.global` of 16 bytes (`T` must be 16 bytes): as [`cp_async_ca`],
/// cached in L2 only (the choice for tiles that each block reads once).
///
/// # Safety
/// As [`cp_async_ca`].
#[inline(always)]
pub unsafe fn cp_async_cg<T: Copy>(dst: *mut T, src: *const T) {
    // SAFETY: upheld by the caller (`src` valid for the whole `T`).
    unsafe { cp_async_cg_zfill(dst, src, 16) }
}

/// [`cp_async_ca`] reading only the first `src_bytes` bytes of `src` (0 to
/// `size_of::<T>()`) and zero-filling the rest (PTX's `src-size` operand): the way to
/// load a tile's ragged edge. With `src_bytes == 0` nothing is read, so `src` may
/// then be any pointer into the array.
///
/// # Safety
/// As [`cp_async_ca`], with `src` valid for `src_bytes` bytes.
#[inline(always)]
pub unsafe fn cp_async_ca_zfill<T: Copy>(dst: *mut T, src: *const T, src_bytes: u32) {
    const {
        assert!(
            matches!(core::mem::size_of::<T>(), 4 | 8 | 16),
            "cp.async copies 4, 8 or 16 bytes"
        )
    };
    // SAFETY: upheld by the caller.
    unsafe {
        arch::cp_async::<false>(
            dst.cast(),
            src.cast(),
            core::mem::size_of::<T>() as u32,
            src_bytes,
        )
    }
}

/// [`cp_async_cg`] with [`cp_async_ca_zfill`]'s `src_bytes`.
///
/// # Safety
/// As [`cp_async_ca_zfill`].
#[inline(always)]
pub unsafe fn cp_async_cg_zfill<T: Copy>(dst: *mut T, src: *const T, src_bytes: u32) {
    const {
        assert!(
            core::mem::size_of::<T>() == 16,
            "cp.async.cg copies 16 bytes"
        )
    };
    // SAFETY: upheld by the caller.
    unsafe { arch::cp_async::<true>(dst.cast(), src.cast(), 16, src_bytes) }
}

/// `cp.async.commit_group`: close the thread's open group of `cp.async` copies (an
/// empty group is fine, and keeps a pipeline's group count regular).
#[inline(always)]
pub fn cp_async_commit_group() {
    arch::cp_async_commit_group()
}

/// `cp.async.wait_group N`: wait until at most `N` of this thread's committed groups
/// are still in flight (the oldest complete first). Then [`sync_threads`] makes the
/// copies of every thread visible to the block.
///
/// [`sync_threads`]: crate::thread::sync_threads
#[inline(always)]
pub fn cp_async_wait_group<const N: u32>() {
    arch::cp_async_wait_group::<N>()
}

/// `cp.async.wait_all`: commit the open group and wait for every group.
#[inline(always)]
pub fn cp_async_wait_all() {
    cp_async_commit_group();
    cp_async_wait_group::<0>();
}
