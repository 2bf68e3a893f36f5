//! Gathers: rows picked by index.

use oxide_device::prelude::*;

/// An embedding lookup: `out[i, :] = table[ids[i], :]`, PyTorch's `embedding(ids, table)`.
/// One block per output row, copied as 128-bit vectors. An id outside `0..vocab` traps.
#[kernel]
#[launch_bounds(1024)]
#[shapes(table[vocab, dim], ids[n], out[n, dim])]
#[launch(block_per_row(out, block = 1024))]
pub fn embedding(table: Array2<f32>, ids: &[i64], mut out: DisjointArray2<f32>) {
    let Some(mut row) = out.block_row_mut() else {
        return;
    };
    let src = table.row_slice(ids[row.row()] as usize);
    row.map(src, |v| v);
}

/// [`embedding`] by row segments: one block per 1024 columns of an output row, every
/// row's first segment before any row's second (`block_segment_mut`). The blocks running
/// at any time read one band of the table's columns, a few MB, so an id that repeats
/// reads its segment from the L2 rather than from memory: the order PyTorch's gather
/// visits the output in. Where ids repeat little, [`embedding`]'s whole rows per block
/// cost fewer blocks.
#[kernel]
#[shapes(table[vocab, dim], ids[n], out[n, dim])]
#[launch(tiles(out, block = (256, 1), tile = (1024, 1)))]
pub fn embedding_segments(table: Array2<f32>, ids: &[i64], mut out: DisjointArray2<f32>) {
    let Some(mut seg) = out.block_segment_mut() else {
        return;
    };
    let src = table.row_slice(ids[seg.row()] as usize);
    seg.map(&src[seg.columns()], |v| v);
}
