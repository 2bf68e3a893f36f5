//! Which tiles of an `attention_sm90` call a block takes (`Tiles`): one on the grid of a
//! block a tile, or every grid-size-th on a persistent grid, numbered head by head or row
//! block by row block; the producer and the consumers walk the same ones.

use core::num::NonZero;
use oxide_device::prelude::*;

use crate::attention_sm90::Args;

/// The blocks' work: tiles of `bm` query rows of one head, numbered longest first (causal
/// ones see the most keys), but for the turn below. A block takes tiles `first, first +
/// step, ...`: one tile on the grid (⌈seqlen_q / bm⌉, heads, batch), a share of them on a
/// persistent grid (x only).
///
/// Numbered head by head (`PERSISTENT` 0 and 1), the tiles of one head are neighbours:
/// the blocks running at once share its keys and values in L2. But a persistent grid
/// then deals a causal call's tiles unevenly: a block's turns come every grid-size
/// tiles, so they fall on the same few row blocks of each head, and a block whose turns
/// fall on early rows takes only short tiles (at S = 512, four row blocks a head, each
/// block always gets the same one: the longest share is 1.65× the mean; at S = 16384,
/// D = 128 it ran 1.5× the time of a block a tile on the H200). So on a persistent grid
/// (`PERSISTENT = 1`) a head's row blocks are turned by the round (grid-size tiles) its
/// first tile falls in: a block's turns then walk through the row blocks (1.03× the mean
/// at S = 512 and 4 or 3 row blocks, 1.12× at S = 2048, D = 128), and a head's tiles are
/// still neighbours; on long sequences the turns can bunch again (up to 1.46× at S =
/// 16384, D = 128). Numbered row block by row block (`PERSISTENT = 2`: the last row block
/// of every head, then the one before, ...), every block's share holds long and short
/// tiles alike (1.03-1.06× the mean on the bench grid), at the price of L2 sharing (at
/// S = 512, D = 128, causal, it read 402 MB from DRAM for 201 MB of q, k and v: L2 hit
/// rate 36 %, ncu on the H200). Which is faster is the tuner's to measure. The order
/// is a const: choosing it at run time (a branch on `causal` in the tile loop) made ptxas
/// rebuild the `wgmma` descriptors in every step of the consumers' inner loop (LOP3 and
/// R2UR, 930 -> 1204 instructions; 5-20 % slower on the H200).
#[derive(Clone, Copy)]
pub(crate) struct Tiles {
    /// Query rows a tile.
    bm: u32,
    m_blocks: NonZero<u32>,
    heads: NonZero<u32>,
    /// heads × batch.
    head_tiles: NonZero<u32>,
    /// Numbered row block by row block.
    by_rows: bool,
    count: u32,
    first: u32,
    step: NonZero<u32>,
}

/// One tile: its batch entry, head, and first query row.
#[derive(Clone, Copy)]
pub(crate) struct TileAt {
    pub(crate) b: usize,
    pub(crate) h: usize,
    pub(crate) m0: usize,
}

impl Tiles {
    #[inline(always)]
    pub(crate) fn new(a: &Args<'_>, bm: u32) -> Tiles {
        let m_blocks = a.seqlen_q.div_ceil(bm);
        let head_tiles = a.heads.checked_mul(a.batch);
        let count = head_tiles.and_then(|n| n.checked_mul(m_blocks));
        Tiles {
            bm,
            m_blocks: NonZero::new(m_blocks).expect("seqlen_q is not 0"),
            heads: NonZero::new(a.heads).expect("heads is not 0"),
            head_tiles: NonZero::new(head_tiles.unwrap_or(0)).expect("heads and batch are not 0"),
            by_rows: a.by_rows,
            count: count.expect("at most 2^32 tiles"),
            // In 32 bits (a grid of one block a tile or an SM has fewer than 2^32);
            // LLVM narrows the flattening to the 32-bit arithmetic it was written as.
            first: thread::block_index() as u32,
            step: NonZero::new(thread::block_count() as u32).expect("a grid has blocks"),
        }
    }

    /// This block's tiles, in turn.
    #[inline(always)]
    pub(crate) fn walk(self) -> TileWalk {
        TileWalk {
            tiles: self,
            next: self.first,
        }
    }

    /// Tile `t` (`t < count`). (32-bit divisions: a 64-bit one is a call, see
    /// `attention_body`.)
    #[inline(always)]
    pub(crate) fn at(self, t: u32) -> TileAt {
        let (from_last, hb) = if self.by_rows {
            (t / self.head_tiles, t % self.head_tiles)
        } else {
            // Turned by the round of the head's first tile (type docs); no turn on a
            // grid of a block a tile (one round).
            let hb = t / self.m_blocks;
            let round = hb * self.m_blocks.get() / self.step;
            (
                (t % self.m_blocks + round % self.m_blocks) % self.m_blocks,
                hb,
            )
        };
        TileAt {
            b: (hb / self.heads) as usize,
            h: (hb % self.heads) as usize,
            m0: ((self.m_blocks.get() - 1 - from_last) * self.bm) as usize,
        }
    }
}

/// A block's tiles (`Tiles::walk`): the producer and the consumers walk the same ones.
#[derive(Clone, Copy)]
pub(crate) struct TileWalk {
    tiles: Tiles,
    next: u32,
}

impl Iterator for TileWalk {
    type Item = TileAt;

    #[inline(always)]
    fn next(&mut self) -> Option<TileAt> {
        let t = self.next;
        if t >= self.tiles.count {
            return None;
        }
        self.next = t + self.tiles.step.get();
        Some(self.tiles.at(t))
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::{vec, vec::Vec};

    fn tiles(m_blocks: u32, heads: u32, batch: u32, by_rows: bool) -> Tiles {
        Tiles {
            bm: 192,
            m_blocks: NonZero::new(m_blocks).unwrap(),
            heads: NonZero::new(heads).unwrap(),
            head_tiles: NonZero::new(heads * batch).unwrap(),
            by_rows,
            count: m_blocks * heads * batch,
            first: 0,
            step: NonZero::new(1).unwrap(),
        }
    }

    /// The blocks of a persistent grid of 132 (the H200's multiprocessors) together meet
    /// every tile once, in both numberings; and with a causal mask (a tile's work is its
    /// key tiles: m_blocks - row block of a square call) the busiest block's share is
    /// within 1.05× of the mean at S = 512 (4 row blocks at D = 128; 4 or 3 at D = 64 in
    /// tiles of 128 or 192 rows), where head by head unturned it was 1.55-1.65×.
    #[test]
    fn a_persistent_grid_deals_every_tile_once_and_short_causal_calls_evenly() {
        const GRID: u32 = 132;
        for (m_blocks, heads, batch) in [(4, 16, 32), (4, 32, 32), (3, 32, 32), (5, 3, 7)] {
            for by_rows in [false, true] {
                let whole = tiles(m_blocks, heads, batch, by_rows);
                let mut seen = vec![false; whole.count as usize];
                let mut shares = Vec::new();
                for first in 0..GRID {
                    let block = Tiles {
                        first,
                        step: NonZero::new(GRID).unwrap(),
                        ..whole
                    };
                    let mut share = 0;
                    for at in block.walk() {
                        let m = at.m0 / whole.bm as usize;
                        let i = (at.b * heads as usize + at.h) * m_blocks as usize + m;
                        assert!(!seen[i], "a tile twice");
                        seen[i] = true;
                        share += m + 1;
                    }
                    shares.push(share);
                }
                assert!(seen.iter().all(|&s| s), "every tile");
                let mean = shares.iter().sum::<usize>() as f64 / GRID as f64;
                let most = *shares.iter().max().unwrap() as f64;
                if heads * batch >= 96 {
                    assert!(
                        most <= 1.05 * mean,
                        "{m_blocks} row blocks: {most} vs {mean}"
                    );
                }
            }
        }
    }

    /// A block walking the whole grid's tiles (first 0, step 1) meets every tile once, in
    /// both numberings, and each head's tiles longest first; row block by row block, every
    /// head's longest tile comes before any head's next.
    #[test]
    fn the_tile_numberings_cover_every_tile_once_longest_first() {
        for (m_blocks, heads, batch) in [(1, 1, 1), (4, 3, 2), (16, 32, 8), (5, 1, 7)] {
            for by_rows in [false, true] {
                let t = tiles(m_blocks, heads, batch, by_rows);
                let mut seen = [[[false; 16]; 32]; 8];
                let mut last_m0 = [[usize::MAX; 32]; 8];
                let mut prev_m0 = usize::MAX;
                assert_eq!(t.walk().count(), t.count as usize, "every tile, once each");
                for (i, at) in t.walk().enumerate() {
                    assert!(at.b < batch as usize && at.h < heads as usize);
                    let m = at.m0 / t.bm as usize;
                    assert!(m < m_blocks as usize && at.m0.is_multiple_of(t.bm as usize));
                    assert!(!seen[at.b][at.h][m], "tile {i} twice");
                    seen[at.b][at.h][m] = true;
                    assert!(at.m0 < last_m0[at.b][at.h], "a head's tiles longest first");
                    last_m0[at.b][at.h] = at.m0;
                    if by_rows {
                        assert!(at.m0 <= prev_m0, "row block by row block");
                        prev_m0 = at.m0;
                    }
                }
            }
        }
    }
}
