//! The 16-byte vector that the f32 GEMM bodies (`gemm`, `sgemm_tall`) load and store
//! through, and the alignment test that chooses between their vector and element paths.

/// Sixteen bytes of f32 or bf16, aligned for one vector load or store.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub(crate) struct Vec4(pub(crate) [f32; 4]);

/// Whether `p` may be read or written as a [`Vec4`]: vector loads need 16-byte alignment.
pub(crate) fn aligned16<T>(p: *const T) -> bool {
    (p as usize).is_multiple_of(16)
}
