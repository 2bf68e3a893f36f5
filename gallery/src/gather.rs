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
