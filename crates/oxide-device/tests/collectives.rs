//! Warp and block collectives over any shuffleable value (`block::reduce`, `block::sum`,
//! `combine::arg_max`, Welford), and rows shared by a block (`block_share`, `cache`,
//! `map`), run by the CPU emulator through the host entries `#[kernel]` generates: real
//! warps of 32 lanes, real barriers, block sizes of 1 to 32 whole warps (the contract of
//! the block collectives: a partial warp traps in the emulator).

use oxide_device::__private::emu::{HostEntry, OxideLaunch, STATUS_OK, call};
use oxide_device::combine::{self, Welford};
use oxide_device::prelude::*;

fn run(entry: HostEntry, grid: u32, block: u32, args: &[u64]) {
    // SAFETY: the tests pass buffers that outlive the call.
    let (status, error) = unsafe { call(entry, &OxideLaunch::linear(grid, block, 0), args) };
    assert_eq!(status, STATUS_OK, "{}", error.text());
}

fn slice<T>(s: &[T]) -> [u64; 2] {
    [s.as_ptr() as u64, s.len() as u64]
}

/// A generator of test data with no dependency (xorshift).
fn data(n: usize, seed: u64) -> Vec<u32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s as u32
        })
        .collect()
}

/// Per block: the argmax (value, index) of its threads' values, then Σ, min and max of
/// them, and the same sum twice more in a loop (the shared buffer reused).
#[kernel]
pub fn block_stats(x: &[f32], ints: &[i64], mut out: DisjointSlice<[f32; 8]>) {
    let t = thread::block_thread_index() as usize;
    let i = thread::block_index() * thread::block_size() as usize + t;
    let v = x[i];
    let (best, at) = block::arg_max(v, t as u32);
    let sum = block::sum(v);
    let low = block::min(ints[i]);
    let high = block::max(v);
    let mut again = 0.0;
    for _ in 0..2 {
        again += block::reduce(v, combine::sum);
    }
    let w = block::reduce(Welford::EMPTY.push(v), combine::welford);
    let counted = block::sum(1u32);
    if let Some(o) = thread::block_leader_index().and_then(|b| out.get_mut(b)) {
        *o = [
            best,
            at as f32,
            sum,
            low as f32,
            high,
            again,
            w.variance(),
            counted as f32,
        ];
    }
}

#[test]
fn block_collectives_combine_every_thread_for_any_warp_count() {
    for block in [32u32, 64, 96, 160, 256, 1024] {
        let grid = 3u32;
        let n = (grid * block) as usize;
        let x: Vec<f32> = data(n, u64::from(block))
            .iter()
            .map(|&r| (r % 17) as f32 - 8.0)
            .collect();
        let ints: Vec<i64> = data(n, 7)
            .iter()
            .map(|&r| i64::from(r) - (1 << 31))
            .collect();
        let out = vec![[f32::NAN; 8]; grid as usize];
        let args = [slice(&x), slice(&ints), slice(&out)].concat();
        run(__oxide_host_block_stats, grid, block, &args);
        for b in 0..grid as usize {
            let part = &x[b * block as usize..][..block as usize];
            let max = part.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let first = part.iter().position(|&v| v == max).unwrap();
            let sum: f32 = part.iter().sum();
            let mean = sum / block as f32;
            let var = part.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / block as f32;
            let low = ints[b * block as usize..][..block as usize]
                .iter()
                .min()
                .unwrap();
            let got = out[b];
            assert_eq!((got[0], got[1]), (max, first as f32), "block {block}");
            assert_eq!(
                (got[2], got[3], got[4]),
                (sum, *low as f32, max),
                "block {block}"
            );
            assert_eq!((got[5], got[7]), (2.0 * sum, block as f32), "block {block}");
            assert!(
                (got[6] - var).abs() <= 1e-3 * var.max(1.0),
                "block {block}: {got:?}"
            );
        }
    }
}

/// Each block's row: its mean (a cached share, reduced), then `out = (x - mean) · w`.
#[kernel]
#[shapes(x[rows, cols], w[cols], out[rows, cols])]
#[launch(block_per_row(out, block = 1024))]
pub fn centre_rows(x: Array2<f32>, w: &[f32], mut out: DisjointArray2<f32>) {
    let Some(mut row) = out.block_row_mut() else {
        return;
    };
    let xs = x.row_slice(row.row()).block_share().cache::<2>();
    let mean = block::sum(xs.fold(0.0, |a, v| a + v)) / row.cols() as f32;
    row.map_indexed((&xs, w), |c, (v, w)| (v - mean) * w + c as f32);
}

#[test]
fn rows_of_any_length_are_read_through_the_cache_and_written_once() {
    for (rows, cols, block) in [
        (3usize, 1usize, 32u32),
        (4, 37, 32),
        (2, 300, 64),
        (2, 3000, 96),
    ] {
        let x: Vec<f32> = data(rows * cols, 3)
            .iter()
            .map(|&r| (r % 9) as f32)
            .collect();
        let w: Vec<f32> = (0..cols).map(|c| (c % 5) as f32 - 2.0).collect();
        let out = vec![f32::NAN; rows * cols];
        let shape = |p: &[f32]| [p.as_ptr() as u64, rows as u64, cols as u64, cols as u64, 1];
        let args = [&shape(&x)[..], &slice(&w), &shape(&out)].concat();
        run(__oxide_host_centre_rows, rows as u32, block, &args);
        for r in 0..rows {
            let row = &x[r * cols..][..cols];
            let mean = row.iter().sum::<f32>() / cols as f32;
            for c in 0..cols {
                let want = (row[c] - mean) * w[c] + c as f32;
                assert_eq!(
                    out[r * cols + c],
                    want,
                    "{rows}x{cols} block {block} ({r}, {c})"
                );
            }
        }
    }
}

/// Column sums, maxima of the same, written with a mean's finish.
#[kernel]
#[shapes(x[rows, cols], sums[cols])]
#[launch(columns(sums))]
pub fn column_stats(x: Array2<f32>, mut sums: DisjointSlice<f32>, mut maxes: DisjointSlice<f32>) {
    let rows = x.rows() as f32;
    sums.reduce_columns(x, 0.0, |a, b| a + b, |s| s / rows.max(1.0));
    maxes.reduce_columns(x, f32::NEG_INFINITY, f32::max, |m| m);
}

#[test]
fn columns_reduce_every_row_for_any_block_and_grid() {
    let shapes = [(1usize, 1usize), (5, 7), (64, 100), (300, 33), (17, 256)];
    for (rows, cols) in shapes {
        for (grid, block) in [(1u32, 1u32), (2, 96), (5, 256), (1, 1024)] {
            let x: Vec<f32> = data(rows * cols + 1, 11)
                .iter()
                .map(|&r| (r % 64) as f32)
                .collect();
            for offset in [0usize, 1] {
                let m = &x[offset..offset + rows * cols];
                let (sums, maxes) = (vec![f32::NAN; cols], vec![f32::NAN; cols]);
                let shape = [m.as_ptr() as u64, rows as u64, cols as u64, cols as u64, 1];
                let args = [&shape[..], &slice(&sums), &slice(&maxes)].concat();
                run(__oxide_host_column_stats, grid, block, &args);
                for c in 0..cols {
                    let column = (0..rows).map(|r| m[r * cols + c]);
                    let (sum, max) = (
                        column.clone().sum::<f32>(),
                        column.fold(f32::NEG_INFINITY, f32::max),
                    );
                    let what =
                        format!("{rows}x{cols} +{offset} grid {grid} block {block} column {c}");
                    assert_eq!(sums[c], sum / rows as f32, "{what}");
                    assert_eq!(maxes[c], max, "{what}");
                }
            }
        }
    }
}
