//! Cooperative groups with cuda-oxide's names: the thread block and warp tiles of
//! `N` lanes (`this_thread_block().tiled_partition::<16>()`), through the
//! [`ThreadGroup`] and [`WarpCollective`] traits. Built on [`crate::warp`] and
//! [`crate::thread`], so they run on both backends.
//!
//! A tile's collectives are relative to the tile: `shfl(v, 0)` reads the tile's first
//! lane, `ballot` returns the tile's bits from bit 0, and a shuffle whose source lies
//! outside the tile returns the caller's own value. Not here: grid groups (a grid-wide
//! sync needs a cooperative launch, which the Python launcher does not make) and
//! `coalesced_threads`. [`this_cluster`] is the thread-block cluster (sm_90,
//! `#[cluster_launch]`), which the emulator refuses, as it does all of `crate::cluster`.

use crate::shuffle::Shuffle;
use crate::{cluster, thread, warp};

/// A set of threads that can synchronise.
pub trait ThreadGroup: Copy {
    /// Threads in the group.
    fn size(&self) -> u32;
    /// This thread's rank in the group, `0..size()`.
    fn thread_rank(&self) -> u32;
    /// Wait until every thread of the group arrives.
    fn sync(&self);
}

/// The thread-block cluster this thread's block belongs to (cuda-oxide's `Cluster`):
/// every thread of every block of it. Without `#[cluster_launch]` it is the block alone.
#[derive(Clone, Copy)]
pub struct Cluster {
    _private: (),
}

/// This thread's cluster.
#[inline(always)]
pub fn this_cluster() -> Cluster {
    Cluster { _private: () }
}

impl Cluster {
    /// Blocks in the cluster.
    #[inline(always)]
    pub fn num_blocks(&self) -> u32 {
        cluster::cluster_size()
    }

    /// This block's rank in the cluster, `0..num_blocks()`.
    #[inline(always)]
    pub fn block_rank(&self) -> u32 {
        cluster::block_rank()
    }
}

impl ThreadGroup for Cluster {
    #[inline(always)]
    fn size(&self) -> u32 {
        cluster::cluster_size() * thread::block_size()
    }
    #[inline(always)]
    fn thread_rank(&self) -> u32 {
        cluster::block_rank() * thread::block_size() + thread::block_thread_index()
    }
    /// [`cluster::cluster_sync`].
    #[inline(always)]
    fn sync(&self) {
        cluster::cluster_sync();
    }
}

/// Warp-level collectives of a group that lives in one warp.
pub trait WarpCollective: ThreadGroup {
    /// Bit `r` set where the thread of rank `r` has `predicate`.
    fn ballot(&self, predicate: bool) -> u32;
    /// `predicate` on every thread of the group.
    fn all(&self, predicate: bool) -> bool;
    /// `predicate` on some thread of the group.
    fn any(&self, predicate: bool) -> bool;
    /// `var` of the thread of rank `src_rank`.
    fn shfl(&self, var: u32, src_rank: u32) -> u32;
    /// `var` of rank `thread_rank() ^ lane_mask` (own value if outside the group).
    fn shfl_xor(&self, var: u32, lane_mask: u32) -> u32;
    /// `var` of rank `thread_rank() + delta` (own value past the end).
    fn shfl_down(&self, var: u32, delta: u32) -> u32;
    /// `var` of rank `thread_rank() - delta` (own value before the start).
    fn shfl_up(&self, var: u32, delta: u32) -> u32;
    /// [`shfl`](Self::shfl) for `f32`.
    fn shfl_f32(&self, var: f32, src_rank: u32) -> f32;
    /// [`shfl_xor`](Self::shfl_xor) for `f32`.
    fn shfl_xor_f32(&self, var: f32, lane_mask: u32) -> f32;
    /// [`shfl_down`](Self::shfl_down) for `f32`.
    fn shfl_down_f32(&self, var: f32, delta: u32) -> f32;
    /// [`shfl_up`](Self::shfl_up) for `f32`.
    fn shfl_up_f32(&self, var: f32, delta: u32) -> f32;
    /// The warp lanes (absolute lane bits) of the group holding the same `value`.
    fn match_any(&self, value: u32) -> u32;
    /// [`match_any`](Self::match_any) for 64-bit values.
    fn match_any_i64(&self, value: u64) -> u32;
    /// The group's lane mask if every thread holds the same `value`, else 0.
    fn match_all(&self, value: u32) -> u32;
    /// [`match_all`](Self::match_all) for 64-bit values.
    fn match_all_i64(&self, value: u64) -> u32;
}

/// The calling thread's block.
#[derive(Copy, Clone, Debug)]
pub struct ThreadBlock {
    _private: (),
}

/// The block of the calling thread.
#[inline(always)]
pub fn this_thread_block() -> ThreadBlock {
    ThreadBlock { _private: () }
}

impl ThreadBlock {
    /// The block cut into tiles of `N` consecutive lanes (`N` a power of two up to 32,
    /// checked at compile time); this thread's tile.
    #[inline(always)]
    pub fn tiled_partition<const N: u32>(self) -> WarpTile<N> {
        const {
            assert!(
                N.is_power_of_two() && N <= 32,
                "WarpTile size must be 1, 2, 4, 8, 16, or 32"
            )
        };
        WarpTile { _private: () }
    }
}

impl ThreadGroup for ThreadBlock {
    #[inline(always)]
    fn size(&self) -> u32 {
        thread::block_size()
    }
    #[inline(always)]
    fn thread_rank(&self) -> u32 {
        thread::block_thread_index()
    }
    #[inline(always)]
    fn sync(&self) {
        thread::sync_threads();
    }
}

/// `N` consecutive lanes of one warp (from [`ThreadBlock::tiled_partition`]).
#[derive(Copy, Clone, Debug)]
pub struct WarpTile<const N: u32> {
    _private: (),
}

impl<const N: u32> WarpTile<N> {
    /// This thread's tile as warp lane bits.
    #[inline(always)]
    fn mask(&self) -> u32 {
        if N == 32 {
            u32::MAX
        } else {
            ((1u32 << N) - 1) << self.first_lane()
        }
    }

    /// The warp lane of the tile's rank 0.
    #[inline(always)]
    fn first_lane(&self) -> u32 {
        warp::lane_id() & !(N - 1)
    }

    /// Which tile of the block this is, and how many tiles the block has.
    #[inline(always)]
    pub fn meta_group_rank(&self) -> u32 {
        thread::block_thread_index() / N
    }

    #[inline(always)]
    pub fn meta_group_size(&self) -> u32 {
        thread::block_size().div_ceil(N)
    }

    /// The warp lane of the tile's thread of rank `src_rank` (taken modulo `N`).
    #[inline(always)]
    fn src_in_tile(&self, src_rank: u32) -> u32 {
        self.first_lane() | (src_rank & (N - 1))
    }
    /// The lane offset a shuffle may use, or 0 (the caller's own value) when it would
    /// leave the tile.
    #[inline(always)]
    fn xor_in_tile(&self, lane_mask: u32) -> u32 {
        if N == 32 || (self.thread_rank() ^ (lane_mask & 31)) < N {
            lane_mask
        } else {
            0
        }
    }
    #[inline(always)]
    fn down_in_tile(&self, delta: u32) -> u32 {
        if N == 32 || (delta & 31) < N - self.thread_rank() {
            delta
        } else {
            0
        }
    }
    #[inline(always)]
    fn up_in_tile(&self, delta: u32) -> u32 {
        if N == 32 || (delta & 31) <= self.thread_rank() {
            delta
        } else {
            0
        }
    }
}

impl<const N: u32> ThreadGroup for WarpTile<N> {
    #[inline(always)]
    fn size(&self) -> u32 {
        N
    }
    #[inline(always)]
    fn thread_rank(&self) -> u32 {
        warp::lane_id() & (N - 1)
    }
    #[inline(always)]
    fn sync(&self) {
        warp::sync_mask(self.mask());
    }
}

/// A tile's shuffles, `$name` for `u32` and `$name_f32` for `f32`: [`Shuffle::$op`]
/// over the tile's lanes, with the lane argument the tile allows (`self.$lane($arg)`).
macro_rules! tile_shuffles {
    ($($name:ident, $name_f32:ident: $op:ident($arg:ident) at $lane:ident;)*) => {$(
        #[inline(always)]
        fn $name(&self, var: u32, $arg: u32) -> u32 {
            var.$op(self.mask(), self.$lane($arg))
        }
        #[inline(always)]
        fn $name_f32(&self, var: f32, $arg: u32) -> f32 {
            var.$op(self.mask(), self.$lane($arg))
        }
    )*};
}

impl<const N: u32> WarpCollective for WarpTile<N> {
    #[inline(always)]
    fn ballot(&self, predicate: bool) -> u32 {
        let bits = warp::ballot_sync(self.mask(), predicate);
        if N == 32 {
            bits
        } else {
            (bits >> self.first_lane()) & ((1u32 << N) - 1)
        }
    }
    #[inline(always)]
    fn all(&self, predicate: bool) -> bool {
        warp::all_sync(self.mask(), predicate)
    }
    #[inline(always)]
    fn any(&self, predicate: bool) -> bool {
        warp::any_sync(self.mask(), predicate)
    }
    tile_shuffles! {
        shfl, shfl_f32: shuffle(src_rank) at src_in_tile;
        shfl_xor, shfl_xor_f32: shuffle_xor(lane_mask) at xor_in_tile;
        shfl_down, shfl_down_f32: shuffle_down(delta) at down_in_tile;
        shfl_up, shfl_up_f32: shuffle_up(delta) at up_in_tile;
    }
    #[inline(always)]
    fn match_any(&self, value: u32) -> u32 {
        warp::match_any_sync(self.mask(), value) & self.mask()
    }
    #[inline(always)]
    fn match_any_i64(&self, value: u64) -> u32 {
        warp::match_any_i64_sync(self.mask(), value) & self.mask()
    }
    #[inline(always)]
    fn match_all(&self, value: u32) -> u32 {
        self.match_all_i64(u64::from(value))
    }
    #[inline(always)]
    fn match_all_i64(&self, value: u64) -> u32 {
        warp::match_all_i64_sync(self.mask(), value)
    }
}
