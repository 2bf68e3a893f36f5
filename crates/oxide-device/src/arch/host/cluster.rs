//! Thread-block clusters on the emulator: refused, each by its instruction. The emulator
//! runs one block at a time, so blocks of a cluster are never resident together: a
//! cluster barrier would wait forever and another block's shared memory does not exist
//! yet. It stops the kernel instead of guessing, before any cluster-dependent value is
//! produced (a kernel with `#[cluster_launch]` that calls none of these runs, since its
//! blocks are independent).

use super::mma::refuse;

fn not_emulated(instruction: &str) -> ! {
    refuse(
        instruction,
        "thread-block clusters (blocks of a cluster resident together, reading one \
         another's shared memory)",
        "on an sm_90 or newer GPU (pytest -m gpu, or CuPy arrays), or keep the cluster \
         code behind a kernel of its own",
    )
}

macro_rules! refused_registers {
    ($($name:ident => $reg:literal;)*) => {$(
        pub(crate) fn $name() -> u32 {
            not_emulated(concat!("mov.u32 from ", $reg))
        }
    )*};
}

with_cluster_registers!(refused_registers);

pub(crate) fn is_explicit_cluster() -> bool {
    not_emulated("mov.pred from %is_explicit_cluster")
}

pub(crate) unsafe fn barrier_cluster_arrive() {
    not_emulated("barrier.cluster.arrive")
}

pub(crate) unsafe fn barrier_cluster_arrive_aligned() {
    not_emulated("barrier.cluster.arrive.aligned")
}

pub(crate) unsafe fn barrier_cluster_wait() {
    not_emulated("barrier.cluster.wait")
}

pub(crate) unsafe fn barrier_cluster_wait_aligned() {
    not_emulated("barrier.cluster.wait.aligned")
}

pub(crate) unsafe fn fence_acq_rel_cluster() {
    not_emulated("fence.acq_rel.cluster")
}

pub(crate) unsafe fn mapa_generic(_p: *const u8, _rank: u32) -> *const u8 {
    not_emulated("mapa")
}

pub(crate) unsafe fn dsmem_read_u32(_p: *const u32, _rank: u32) -> u32 {
    not_emulated("ld.shared::cluster (mapa)")
}

pub(crate) unsafe fn dsmem_read_f32x4(_p: *const f32, _rank: u32) -> [f32; 4] {
    not_emulated("ld.shared::cluster.v4.f32 (mapa)")
}

pub(crate) unsafe fn dsmem_write_u32(_p: *mut u32, _rank: u32, _v: u32) {
    not_emulated("st.shared::cluster (mapa)")
}

pub(crate) unsafe fn cp_async_bulk_tensor_2d_g2s_multicast(
    _dst: *mut u8,
    _tensor_map: *const u8,
    _x: i32,
    _y: i32,
    _bar: *mut u64,
    _cta_mask: u16,
) {
    not_emulated("cp.async.bulk.tensor multicast::cluster (TMA)")
}
