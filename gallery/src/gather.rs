//! Gathers: rows picked by index.

use oxide_device::prelude::*;

/// An embedding lookup: `out[i, :] = table[ids[i], :]`, PyTorch's `embedding(ids, table)`.
/// An id outside `0..vocab` traps.
///
/// By row segments: one block per 1024 columns of an output row, every row's first
/// segment before any row's second (`block_segment_mut`). The blocks running at any time
/// read one band of the table's columns, a few MB, so an id that repeats (token ids do)
/// reads its segment from the L2 rather than from memory: the order PyTorch's gather
/// visits the output in. A whole row per block, in row order, found a repeat in the L2
/// only when its first use was a few hundred rows back (0.90x PyTorch on the H200 at
/// 4096x16384). Blocks of 64 threads copy four 16-byte vectors each: with 256 threads
/// of one vector, each thread's share of the block's set-up (its row and segment, the
/// row's alignment) cost 0.81x the C++ twin.
#[kernel]
#[launch_bounds(64)]
#[shapes(table[vocab, dim], ids[n], out[n, dim])]
#[launch(tiles(out, block = (64, 1), tile = (1024, 1)))]
pub fn embedding(table: Array2<f32>, ids: &[i64], mut out: DisjointArray2<f32>) {
    let Some(mut seg) = out.block_segment_mut() else {
        return;
    };
    let src = table.row_slice(ids[seg.row()] as usize);
    seg.map(&src[seg.columns()], |v| v);
}
