//! Gathers: rows picked by index.

use oxide_device::prelude::*;

/// An embedding lookup: `out[i, :] = table[ids[i], :]`, PyTorch's `embedding(ids, table)`.
/// An id outside `0..vocab` traps.
#[kernel]
#[shapes(table[vocab, dim], ids[n], out[n, dim])]
#[launch(block_per_row(out))]
pub fn embedding(table: Array2<f32>, ids: &[i64], mut out: DisjointArray2<f32>) {
    let Some(mut row) = out.block_row_mut() else {
        return;
    };
    let src = table.row_slice(ids[row.row()] as usize);
    for (c, o) in row.iter_mut() {
        *o = src[c];
    }
}
