//! Thread-block clusters (sm_90+), under NVIDIA cuda-oxide's names
//! (`cuda_device::cluster`): a kernel written against them ports by changing its `use`
//! line.
//!
//! A kernel marked `#[cluster_launch(x, y, z)]` runs in clusters of `x · y · z` blocks
//! (at most 8) that the GPU schedules together, on one GPC. The blocks of a cluster can
//! wait for one another ([`cluster_sync`], or [`barrier_cluster_arrive`] and
//! [`barrier_cluster_wait`] apart) and read and write one another's shared memory
//! ("distributed shared memory", DSMEM: [`map_shared_rank`], [`dsmem_read_u32`]); a TMA
//! load can fill the same tile in several of them at once
//! ([`tma::cp_async_bulk_tensor_2d_g2s_multicast`](crate::tma::cp_async_bulk_tensor_2d_g2s_multicast)).
//! The grid must be a multiple of the cluster per axis: pyoxide's launcher refuses
//! another grid before launching, and rounds a plain call's grid up.
//!
//! ```ignore
//! #[kernel]
//! #[cluster_launch(2, 1, 1)]
//! pub fn swap_ranks(mut out: DisjointSlice<u32>) {
//!     static mut MINE: SharedArray<u32, 1> = SharedArray::UNINIT;
//!     let rank = cluster::block_rank();
//!     if thread::threadIdx_x() == 0 {
//!         unsafe { MINE.as_mut_ptr().write(rank) };
//!     }
//!     cluster::cluster_sync(); // every block's write is visible to the cluster
//!     let other = (rank + 1) % cluster::cluster_size();
//!     let theirs = unsafe { cluster::dsmem_read_u32(MINE.as_ptr(), other) };
//!     cluster::cluster_sync(); // no block exits while another may still read it
//!     // ...
//! }
//! ```
//!
//! A block's shared memory lives as long as the block: a block must not exit while
//! another may still read or write it (end with a [`cluster_sync`]).
//!
//! On the emulator every function here stops the kernel with an error that names the
//! instruction: it runs one block at a time, so it has no cluster to give.
#![allow(non_snake_case)]

use crate::arch;

/// Each register under cuda-oxide's two spellings: the function, and its snake_case
/// name for it.
macro_rules! registers {
    ($($(#[$doc:meta])* $raw:ident, $alias:ident => $arch:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $raw() -> u32 {
            arch::$arch()
        }

        pub use $raw as $alias;
    )*};
}

registers! {
    /// `%cluster_ctaid.x`: this block's x position in its cluster, `0..cluster_nctaidX()`.
    cluster_ctaidX, cluster_ctaid_x => cluster_ctaid_x;
    /// `%cluster_ctaid.y`.
    cluster_ctaidY, cluster_ctaid_y => cluster_ctaid_y;
    /// `%cluster_ctaid.z`.
    cluster_ctaidZ, cluster_ctaid_z => cluster_ctaid_z;
    /// `%cluster_nctaid.x`: blocks per cluster along x (1 without `#[cluster_launch]`).
    cluster_nctaidX, cluster_nctaid_x => cluster_nctaid_x;
    /// `%cluster_nctaid.y`.
    cluster_nctaidY, cluster_nctaid_y => cluster_nctaid_y;
    /// `%cluster_nctaid.z`.
    cluster_nctaidZ, cluster_nctaid_z => cluster_nctaid_z;
    /// `%clusterid.x`: the cluster's x position in the grid of clusters.
    cluster_idX, cluster_id_x => clusterid_x;
    /// `%clusterid.y`.
    cluster_idY, cluster_id_y => clusterid_y;
    /// `%clusterid.z`.
    cluster_idZ, cluster_id_z => clusterid_z;
    /// `%nclusterid.x`: clusters in the grid along x.
    cluster_grid_dimX, cluster_grid_dim_x => nclusterid_x;
    /// `%nclusterid.y`.
    cluster_grid_dimY, cluster_grid_dim_y => nclusterid_y;
    /// `%nclusterid.z`.
    cluster_grid_dimZ, cluster_grid_dim_z => nclusterid_z;
}

/// `%cluster_ctarank`: this block's rank in its cluster, `0..cluster_size()`
/// (x fastest, then y, then z), the number [`map_shared_rank`] and the multicast mask
/// take.
#[inline(always)]
pub fn block_rank() -> u32 {
    arch::cluster_ctarank()
}

/// `%cluster_nctarank`: blocks in the cluster (`x · y · z` of `#[cluster_launch]`).
#[inline(always)]
pub fn cluster_size() -> u32 {
    arch::cluster_nctarank()
}

/// This block's cluster's linear index in the grid (x fastest).
#[inline(always)]
pub fn cluster_idx() -> u32 {
    let (nx, ny) = (arch::nclusterid_x(), arch::nclusterid_y());
    arch::clusterid_x() + arch::clusterid_y() * nx + arch::clusterid_z() * nx * ny
}

/// Clusters in the grid.
#[inline(always)]
pub fn num_clusters() -> u32 {
    arch::nclusterid_x() * arch::nclusterid_y() * arch::nclusterid_z()
}

/// `%is_explicit_cluster`: whether the launch gave the kernel a cluster (its PTX's
/// `.reqnctapercluster`, or a cluster launch attribute) rather than the implicit
/// one-block cluster of every other launch.
#[inline(always)]
pub fn is_explicit_cluster() -> bool {
    arch::is_explicit_cluster()
}

/// Wait until every thread of every block of the cluster has arrived here: an arrive
/// (release) then a wait (acquire), so shared-memory writes made before it by any
/// block of the cluster are visible after it to all of them. Like
/// [`sync_threads`](crate::thread::sync_threads), every thread of the cluster must call
/// it, the same number of times; otherwise the cluster hangs.
///
/// It uses the unaligned forms (`barrier.cluster.arrive; barrier.cluster.wait;`), which
/// count each thread wherever it arrives: LLVM was seen copying the barrier into both
/// arms of an `if threadIdx.x == 0` around it, which the `.aligned` forms forbid (all
/// threads of a warp must execute the same instruction).
#[inline(always)]
pub fn cluster_sync() {
    // SAFETY: `barrier.cluster` has no memory operands; a thread that skips it makes
    // the cluster hang, not memory unsafe (as `bar.sync` for `sync_threads`).
    unsafe {
        arch::barrier_cluster_arrive();
        arch::barrier_cluster_wait();
    }
}

forward! {
    /// `barrier.cluster.arrive`: this thread arrives at the cluster barrier, with release
    /// semantics (PTX's default; the `.relaxed` form needs PTX 8.0, which LLVM 22 does not
    /// write for sm_90), so its earlier writes are visible to threads that then complete
    /// [`barrier_cluster_wait`]. Work that needs no other block can go between the two.
    ///
    /// # Safety
    /// Every non-exited thread of the cluster arrives exactly once per phase, then calls
    /// [`barrier_cluster_wait`] before arriving again.
    pub unsafe fn barrier_cluster_arrive() = arch::barrier_cluster_arrive;
    /// `barrier.cluster.arrive.aligned`: [`barrier_cluster_arrive`] for a whole warp at once.
    ///
    /// # Safety
    /// As [`barrier_cluster_arrive`]; and every thread of the warp executes this same
    /// instruction in the compiled code. Keep it out of code that branches on the thread
    /// index before or after it (LLVM may copy it into both arms: see [`cluster_sync`]), or
    /// use [`barrier_cluster_arrive`].
    pub unsafe fn barrier_cluster_arrive_aligned() = arch::barrier_cluster_arrive_aligned;
    /// `barrier.cluster.arrive` under cuda-oxide's name for the relaxed form. PTX 7.8 (what
    /// LLVM 22 writes for sm_90) has no `.relaxed` qualifier, so this is the release form:
    /// it orders more than asked, never less.
    ///
    /// # Safety
    /// As [`barrier_cluster_arrive`].
    pub unsafe fn barrier_cluster_arrive_relaxed() = arch::barrier_cluster_arrive;
    /// `barrier.cluster.wait`: wait, with acquire semantics (PTX's default), until every
    /// non-exited thread of the cluster has arrived in the current phase.
    ///
    /// # Safety
    /// This thread arrived ([`barrier_cluster_arrive`]) in the current phase.
    pub unsafe fn barrier_cluster_wait() = arch::barrier_cluster_wait;
    /// `barrier.cluster.wait.aligned`: [`barrier_cluster_wait`] for a whole warp at once.
    ///
    /// # Safety
    /// As [`barrier_cluster_wait`]; and every thread of the warp executes this same
    /// instruction in the compiled code (as for [`barrier_cluster_arrive_aligned`]).
    pub unsafe fn barrier_cluster_wait_aligned() = arch::barrier_cluster_wait_aligned;
}

/// `fence.acq_rel.cluster`: order this thread's memory accesses at cluster scope (for
/// example, an `mbarrier` initialised before a multicast copy signals it from another
/// block: fence, then [`cluster_sync`]).
#[inline(always)]
pub fn fence_acq_rel_cluster() {
    // SAFETY: a fence has no operands.
    unsafe { arch::fence_acq_rel_cluster() }
}

/// `mapa.u64`: the generic address of the object at `local_ptr` in this block's shared
/// memory, in the shared memory of block `target_rank` of the cluster. Ordinary loads
/// and stores through it reach the other block (distributed shared memory).
///
/// # Safety
/// `local_ptr` points into this block's shared memory (a `SharedArray` or dynamic
/// shared memory), and `target_rank < cluster_size()`. Accesses through the result
/// follow Rust's rules for shared state across blocks: the other block made its writes
/// visible before ([`cluster_sync`]), no two blocks race on one location, and the
/// target block has not exited.
#[must_use]
#[inline(always)]
pub unsafe fn map_shared_rank<T>(local_ptr: *const T, target_rank: u32) -> *const T {
    // SAFETY: upheld by the caller.
    unsafe { arch::mapa_generic(local_ptr.cast(), target_rank).cast() }
}

/// [`map_shared_rank`] for writing.
///
/// # Safety
/// As [`map_shared_rank`]; and no other thread reads or writes the location while this
/// one writes it, until a [`cluster_sync`] orders them.
#[must_use]
#[inline(always)]
pub unsafe fn map_shared_rank_mut<T>(local_ptr: *mut T, target_rank: u32) -> *mut T {
    // SAFETY: upheld by the caller.
    unsafe { arch::mapa_generic(local_ptr.cast_const().cast(), target_rank) as *mut T }
}

forward! {
    /// `mapa.shared::cluster` + `ld.shared::cluster.u32`: the `u32` at `local_ptr`'s offset
    /// in the shared memory of block `target_rank`.
    ///
    /// # Safety
    /// `local_ptr` is 4-byte aligned and points into this block's shared memory;
    /// `target_rank < cluster_size()`; the target block wrote the value before a
    /// [`cluster_sync`] (or release arrive) that this thread has passed, and has not
    /// exited.
    #[must_use]
    pub unsafe fn dsmem_read_u32(local_ptr: *const u32, target_rank: u32) -> u32
        = arch::dsmem_read_u32;
    /// `mapa.shared::cluster` + `ld.shared::cluster.v4.f32`: the four `f32` at
    /// `local_ptr`'s offset in the shared memory of block `target_rank`, in one 16-byte
    /// load (a reduction across the cluster's blocks reads its peers' partial sums so).
    ///
    /// # Safety
    /// As [`dsmem_read_u32`], with `local_ptr` 16-byte aligned.
    #[must_use]
    pub unsafe fn dsmem_read_f32x4(local_ptr: *const f32, target_rank: u32) -> [f32; 4]
        = arch::dsmem_read_f32x4;
    /// `mapa.shared::cluster` + `st.shared::cluster.u32`: write `value` at `local_ptr`'s
    /// offset in the shared memory of block `target_rank`.
    ///
    /// # Safety
    /// As [`dsmem_read_u32`], and no other thread reads or writes that location until a
    /// [`cluster_sync`] orders them.
    pub unsafe fn dsmem_write_u32(local_ptr: *mut u32, target_rank: u32, value: u32)
        = arch::dsmem_write_u32;
}
