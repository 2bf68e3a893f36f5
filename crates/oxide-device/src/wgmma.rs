//! sm_90 (Hopper) warpgroup tensor cores: `wgmma.mma_async` with its fence/commit/wait,
//! shared-memory matrix descriptors, and `setmaxnreg`. Their operands usually arrive
//! by TMA ([`crate::tma`]) under `mbarrier`s ([`crate::barrier`]).
//!
//! `wgmma` exists only on the arch-specific target: a crate that calls
//! [`wgmma_m64n64k16_f32_bf16`] builds with `cargo oxide build --arch sm_90a`, and a
//! build for a plain target (`sm_90`, `sm_80`) is refused naming the kernel and the
//! instruction. pyoxide loads the `sm_90a` PTX on a device of compute capability 9.0.
//!
//! The CPU emulator runs none of these: each stops the kernel with an error that names
//! the instruction (a warpgroup's asynchronous products and the tensor-memory engine
//! have no faithful emulation here yet). Kernels the emulator should run use `mma`'s
//! warp-level `mma.sync` path.
//!
//! # Matrix descriptors
//!
//! [`smem_descriptor`] packs the 64-bit descriptor `wgmma` reads an operand through:
//! bits 0–13 the shared address / 16, 16–29 the leading-dimension byte offset / 16,
//! 32–45 the stride byte offset / 16, 62–63 the swizzle mode ([`Swizzle`]), as the
//! PTX ISA's "Matrix Descriptor Format" gives them.
//!
//! # Safety
//!
//! `wgmma` calls are collective over a warpgroup (4 consecutive warps, 128 threads),
//! converged; the accumulator registers must not be read between an `mma_async` and the
//! `wgmma_wait_group` that retires it.

use crate::arch;

/// Shared-memory swizzle of a `wgmma` operand (the descriptor's bits 62–63).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum Swizzle {
    None = 0,
    B128 = 1,
    B64 = 2,
    B32 = 3,
}

/// The `wgmma` matrix descriptor of an operand at `smem` (a pointer into shared
/// memory, 16-byte aligned) with the given leading and stride byte offsets.
#[inline(always)]
pub fn smem_descriptor<T>(
    smem: *const T,
    leading_bytes: u32,
    stride_bytes: u32,
    swizzle: Swizzle,
) -> u64 {
    descriptor_bits(
        arch::shared_addr(smem),
        leading_bytes,
        stride_bytes,
        swizzle,
    )
}

/// [`smem_descriptor`] of the operand at shared-state-space address `address`.
#[inline(always)]
pub const fn descriptor_bits(
    address: u32,
    leading_bytes: u32,
    stride_bytes: u32,
    swizzle: Swizzle,
) -> u64 {
    const fn field(x: u32) -> u64 {
        ((x >> 4) & 0x3fff) as u64
    }
    field(address) | field(leading_bytes) << 16 | field(stride_bytes) << 32 | (swizzle as u64) << 62
}

/// A [`smem_descriptor`] kept as its two 32-bit halves, for a k-loop that walks a ring
/// of stages. The low half holds the start address (16-byte units, bits 0-13) and the
/// leading byte offset; the high half the stride byte offset and the swizzle, which the
/// loop never changes. Moving the descriptor on to another stage or k-step ([`at`]) is
/// then one 32-bit add, where building it from the stage's address again takes 64-bit
/// shifts, masks and moves (kernels_sm90a's gemm_sm90 docs give what that cost).
///
/// [`at`]: SmemDescriptor::at
#[derive(Clone, Copy)]
pub struct SmemDescriptor {
    lo: u32,
    hi: u32,
}

impl SmemDescriptor {
    /// [`smem_descriptor`]`(smem, leading_bytes, stride_bytes, swizzle)`.
    #[inline(always)]
    pub fn new<T>(smem: *const T, leading_bytes: u32, stride_bytes: u32, swizzle: Swizzle) -> Self {
        Self::from_bits(smem_descriptor(smem, leading_bytes, stride_bytes, swizzle))
    }

    /// The descriptor `bits` (as [`smem_descriptor`] or [`descriptor_bits`] make it).
    #[inline(always)]
    pub const fn from_bits(bits: u64) -> Self {
        Self {
            lo: bits as u32,
            hi: (bits >> 32) as u32,
        }
    }

    /// The descriptor of the operand `bytes` further on in shared memory (a multiple of
    /// 16). The address field holds any shared address (14 bits of 16-byte units: 256
    /// KiB), so while the operand stays in shared memory the add never carries into the
    /// leading byte offset.
    #[inline(always)]
    pub const fn at(self, bytes: usize) -> Self {
        Self {
            lo: self.lo.wrapping_add((bytes >> 4) as u32),
            hi: self.hi,
        }
    }

    /// The 64-bit descriptor a `wgmma` takes.
    #[inline(always)]
    pub const fn get(self) -> u64 {
        self.lo as u64 | (self.hi as u64) << 32
    }
}

/// The shared-state-space address (`cvta.to.shared`) of `p`, a pointer into shared
/// memory: what descriptors and TMA destinations are made of, and what a kernel
/// aligns (the 128-byte swizzle wants 1024-byte-aligned tiles).
#[inline(always)]
pub fn shared_address<T>(p: *const T) -> u32 {
    arch::shared_addr(p)
}

/// `wgmma.fence.sync.aligned`: order this warpgroup's register and shared-memory
/// writes before the `wgmma.mma_async` that reads them.
#[inline(always)]
pub fn wgmma_fence() {
    arch::wgmma_fence()
}

/// `wgmma.commit_group.sync.aligned`: close the group of issued `mma_async`s.
#[inline(always)]
pub fn wgmma_commit_group() {
    arch::wgmma_commit_group()
}

/// `wgmma.wait_group.sync.aligned N`: wait until at most `N` groups are pending.
#[inline(always)]
pub fn wgmma_wait_group<const N: u32>() {
    arch::wgmma_wait_group::<N>()
}

/// [`wgmma_wait_group`] for code that reads the accumulators after it (the 32 of
/// [`wgmma_m64n64k16_f32_bf16`], the 64 of [`wgmma_m64n128k16_f32_bf16`] or the 128 of
/// [`wgmma_m64n256k16_f32_bf16`]): the wait
/// is marked as reading and writing `acc`, so the compiler cannot move a use of the
/// results above it. With the plain wait, LLVM may start on the results (say, packing
/// two f32 into a u64 for an epilogue) before the wait, and ptxas then serialises
/// every `wgmma` of the kernel ("Potential Performance Loss", its info C7514). Same
/// rules as [`wgmma_wait_group`].
#[inline(always)]
pub fn wgmma_wait_group_acc<const N: u32>(acc: &mut impl Accumulators) {
    acc.wait_group::<N>()
}

/// The accumulator arrays of this module's `wgmma`s (see [`wgmma_wait_group_acc`]).
pub trait Accumulators: sealed::Sealed {
    /// `wgmma.wait_group.sync.aligned N`, naming these registers.
    fn wait_group<const N: u32>(&mut self);
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for [f32; 8] {}
    impl Sealed for [f32; 32] {}
    impl Sealed for [f32; 64] {}
    impl Sealed for [f32; 128] {}
}

macro_rules! accumulators {
    ($($n:literal => $wait:ident;)*) => {$(
        impl Accumulators for [f32; $n] {
            #[inline(always)]
            fn wait_group<const N: u32>(&mut self) {
                arch::$wait::<N>(self)
            }
        }
    )*};
}

accumulators! {
    8 => wgmma_wait_group_acc8;
    32 => wgmma_wait_group_acc32;
    64 => wgmma_wait_group_acc64;
    128 => wgmma_wait_group_acc128;
}

macro_rules! shared_forms {
    ($($(#[$doc:meta])* $name:ident => $arch:ident, $n:literal;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub unsafe fn $name<const TRANS_A: u32, const TRANS_B: u32>(
            acc: &mut [f32; $n],
            desc_a: u64,
            desc_b: u64,
            accumulate: bool,
        ) {
            // SAFETY: upheld by the caller.
            unsafe { arch::$arch::<TRANS_A, TRANS_B>(acc, desc_a, desc_b, accumulate) }
        }
    )*};
}

shared_forms! {
    /// `wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16`: `acc = A·B (+ acc when
    /// `accumulate`)` for a 64×64 tile, A (64×16) and B (16×64) read from shared memory
    /// through descriptors. `TRANS_A`/`TRANS_B` (0 or 1) are the instruction's
    /// transpose immediates (1: the operand is stored MN-major). Each thread of the
    /// warpgroup holds 32 of the 64×64 f32 results: thread `t` (warp `w = t/32`, lane `l`)
    /// holds rows `16w + l/4` and `+8`, columns `8j + 2(l%4)` and `+1` for `j` in 0..8,
    /// in the order (row, col), (row, col+1), (row+8, col), (row+8, col+1) per `j`.
    ///
    /// # Safety
    /// See the module docs: all 128 threads of the warpgroup, converged, after
    /// [`wgmma_fence`]; the descriptors describe initialised shared memory.
    wgmma_m64n64k16_f32_bf16 => wgmma_m64n64k16_bf16, 32;
    /// `wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16`: as
    /// [`wgmma_m64n64k16_f32_bf16`] for a 64×16 tile (B 16×16: a product of few columns,
    /// such as a GEMM's 16 tokens as wgmma's `n`). Thread `t` holds 8 results in the same
    /// pattern, `j` in 0..2: rows `16w + l/4` and `+8`, columns `8j + 2(l%4)` and `+1`.
    ///
    /// # Safety
    /// As [`wgmma_m64n64k16_f32_bf16`].
    wgmma_m64n16k16_f32_bf16 => wgmma_m64n16k16_bf16, 8;
    /// `wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16`: as
    /// [`wgmma_m64n64k16_f32_bf16`] for a 64×256 tile (B 16×256). Thread `t` holds 128
    /// results in the same pattern, `j` in 0..32: rows `16w + l/4` and `+8`, columns
    /// `8j + 2(l%4)` and `+1`, element `4j + i` in the order (row, col), (row, col+1),
    /// (row+8, col), (row+8, col+1).
    ///
    /// # Safety
    /// As [`wgmma_m64n64k16_f32_bf16`].
    wgmma_m64n256k16_f32_bf16 => wgmma_m64n256k16_bf16, 128;
    /// `wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16`: [`wgmma_m64n64k16_f32_bf16`]
    /// for f16 operands.
    ///
    /// # Safety
    /// As [`wgmma_m64n64k16_f32_bf16`].
    wgmma_m64n64k16_f32_f16 => wgmma_m64n64k16_f16, 32;
    /// `wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16`: as
    /// [`wgmma_m64n64k16_f32_bf16`] for a 64×128 tile (B 16×128). Thread `t` holds 64
    /// results in the same pattern, `j` in 0..16: rows `16w + l/4` and `+8`, columns
    /// `8j + 2(l%4)` and `+1`, element `4j + i` in the order (row, col), (row, col+1),
    /// (row+8, col), (row+8, col+1).
    ///
    /// # Safety
    /// As [`wgmma_m64n64k16_f32_bf16`].
    wgmma_m64n128k16_f32_bf16 => wgmma_m64n128k16_bf16, 64;
    /// [`wgmma_m64n128k16_f32_bf16`] for f16 operands.
    ///
    /// # Safety
    /// As [`wgmma_m64n64k16_f32_bf16`].
    wgmma_m64n128k16_f32_f16 => wgmma_m64n128k16_f16, 64;
}

macro_rules! register_a_forms {
    ($($(#[$doc:meta])* $name:ident => $arch:ident, $n:literal;)*) => {$(
        $(#[$doc])*
        ///
        /// A (64×16) comes from registers: each thread passes four packed pairs, its
        /// warp's 16 rows (`16w..16w+16`) in `mma.m16n8k16`'s A layout (register `i`
        /// holds row `l/4 + 8(i%2)`, columns `2(l%4) + 8(i/2)` and `+1`, the lower
        /// column in the low half), so an f32 accumulator of a previous product,
        /// packed pairwise ([`cvt_bf16x2_f32`](crate::convert::cvt_bf16x2_f32)), is
        /// an A operand as it is (FlashAttention's `p·v`). B (16×N) comes through its
        /// descriptor; `TRANS_B` as in the shared-memory forms.
        ///
        /// # Safety
        /// As [`wgmma_m64n64k16_f32_bf16`]; the A registers are not written between
        /// this call and the [`wgmma_wait_group`] that retires it.
        #[inline(always)]
        pub unsafe fn $name<const TRANS_B: u32>(
            acc: &mut [f32; $n],
            a: [u32; 4],
            desc_b: u64,
            accumulate: bool,
        ) {
            // SAFETY: upheld by the caller.
            unsafe { arch::$arch::<TRANS_B>(acc, a, desc_b, accumulate) }
        }
    )*};
}

register_a_forms! {
    /// `wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16` with A from registers.
    wgmma_m64n64k16_f32_bf16_rs => wgmma_m64n64k16_bf16_rs, 32;
    /// `wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16` with A from registers.
    wgmma_m64n64k16_f32_f16_rs => wgmma_m64n64k16_f16_rs, 32;
    /// `wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16` with A from registers.
    wgmma_m64n128k16_f32_bf16_rs => wgmma_m64n128k16_bf16_rs, 64;
    /// `wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16` with A from registers.
    wgmma_m64n128k16_f32_f16_rs => wgmma_m64n128k16_f16_rs, 64;
}

forward! {
    /// `setmaxnreg.inc.sync.aligned.u32 N` (sm_90a): raise this warpgroup's register
    /// limit to `N` (a multiple of 8, 24..=256), taking registers another warpgroup
    /// released with [`setmaxnreg_dec`]. Works only in a kernel whose register count is
    /// capped at entry (`#[launch_bounds(threads, 1)]`); each warpgroup's role should be
    /// one branch of an if/else. Executed by all threads of the warpgroup together.
    pub fn setmaxnreg_inc<const N: u32>() = arch::setmaxnreg_inc;
    /// `setmaxnreg.dec.sync.aligned.u32 N` (sm_90a): lower this warpgroup's register
    /// limit to `N`, returning the rest to the block's pool. See [`setmaxnreg_inc`].
    pub fn setmaxnreg_dec<const N: u32>() = arch::setmaxnreg_dec;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Moving a descriptor on by `bytes` is the descriptor of the address `bytes` further,
    /// for every operand in shared memory (up to the 227 KiB a block may have, and the
    /// 256 KiB the address field holds), whatever the offsets and swizzle beside it.
    #[test]
    fn a_descriptor_moved_on_is_the_descriptor_of_the_address_further_on() {
        let swizzles = [Swizzle::None, Swizzle::B32, Swizzle::B64, Swizzle::B128];
        for (leading, stride, swizzle) in [(16, 1024, 3), (8192, 1024, 3), (128, 256, 0), (0, 0, 1)]
        {
            for address in (0..256 * 1024).step_by(16 * 997).chain([0, 1024, 0x38000]) {
                for bytes in [0, 16, 32, 2048, 16384, 32768, 196_592] {
                    if address + bytes >= 256 * 1024 {
                        continue;
                    }
                    let moved = SmemDescriptor::from_bits(descriptor_bits(
                        address as u32,
                        leading,
                        stride,
                        swizzles[swizzle],
                    ))
                    .at(bytes);
                    let direct = descriptor_bits(
                        (address + bytes) as u32,
                        leading,
                        stride,
                        swizzles[swizzle],
                    );
                    assert_eq!(moved.get(), direct, "{address:#x} + {bytes}");
                }
            }
        }
    }
}
