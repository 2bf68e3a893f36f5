//! The emulator's answer to the sm_90 instructions added for attention and the GEMM's
//! few-row tiles (`wgmma`'s m64n16k16, m64n128k16 and register-A forms, 4-D TMA loads,
//! `barrier.arrive`): refused by name,
//! as `mma.rs` refuses the rest of sm_90's asynchronous engines.

use super::mma::refuse;

fn not_emulated(instruction: &str) -> ! {
    refuse(
        instruction,
        "sm_90's asynchronous warpgroup/tensor-memory engines",
        "on an sm_90 GPU, or use mma.sync (oxide_device::mma), which the emulator runs",
    )
}

pub(crate) fn wgmma_wait_group_acc64<const N: u32>(_acc: &mut [f32; 64]) {
    not_emulated("wgmma.wait_group")
}

pub(crate) fn wgmma_wait_group_acc8<const N: u32>(_acc: &mut [f32; 8]) {
    not_emulated("wgmma.wait_group")
}

macro_rules! refused_ss {
    ($($name:ident: $n:literal;)*) => {$(
        pub(crate) unsafe fn $name<const TRANS_A: u32, const TRANS_B: u32>(
            _acc: &mut [f32; $n],
            _desc_a: u64,
            _desc_b: u64,
            _accumulate: bool,
        ) {
            not_emulated("wgmma.mma_async")
        }
    )*};
}

macro_rules! refused_rs {
    ($($name:ident: $n:literal;)*) => {$(
        pub(crate) unsafe fn $name<const TRANS_B: u32>(
            _acc: &mut [f32; $n],
            _a: [u32; 4],
            _desc_b: u64,
            _accumulate: bool,
        ) {
            not_emulated("wgmma.mma_async")
        }
    )*};
}

refused_ss! {
    wgmma_m64n16k16_bf16: 8;
    wgmma_m64n64k16_f16: 32;
    wgmma_m64n128k16_bf16: 64;
    wgmma_m64n128k16_f16: 64;
}

refused_rs! {
    wgmma_m64n64k16_bf16_rs: 32;
    wgmma_m64n64k16_f16_rs: 32;
    wgmma_m64n128k16_bf16_rs: 64;
    wgmma_m64n128k16_f16_rs: 64;
}

pub(crate) unsafe fn cp_async_bulk_tensor_4d_g2s(
    _dst: *mut u8,
    _tensor_map: *const u8,
    _coords: [i32; 4],
    _bar: *mut u64,
) {
    not_emulated("cp.async.bulk.tensor (TMA)")
}

pub(crate) unsafe fn cp_async_bulk_tensor_4d_s2g(
    _src: *const u8,
    _tensor_map: *const u8,
    _coords: [i32; 4],
) {
    not_emulated("cp.async.bulk.tensor store (TMA)")
}

pub(crate) unsafe fn named_barrier_arrive(_id: u32, _threads: u32) {
    not_emulated("barrier.arrive with a named barrier")
}
