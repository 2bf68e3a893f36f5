use super::cached::tree;
use super::*;
use crate::testing::each_thread;
use crate::vector::Vector;
use std::vec::Vec;

/// Buffers of 16-byte-aligned f32s, so that views start at a known phase.
fn aligned(n: usize, f: impl Fn(usize) -> f32) -> Vec<Vector<f32, 4>> {
    (0..n.div_ceil(4))
        .map(|v| Vector(core::array::from_fn(|k| f(4 * v + k))))
        .collect()
}

fn flat(v: &[Vector<f32, 4>]) -> &[f32] {
    // SAFETY: Vector<f32, 4> is four f32s.
    unsafe { core::slice::from_raw_parts(v.as_ptr().cast(), 4 * v.len()) }
}

fn flat_mut(v: &mut [Vector<f32, 4>]) -> &mut [f32] {
    // SAFETY: as `flat`.
    unsafe { core::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), 4 * v.len()) }
}

#[test]
fn a_share_visits_every_element_once_in_order() {
    let data = aligned(96, |i| i as f32);
    for start in 0..4 {
        for len in [0usize, 1, 3, 4, 5, 17, 40, 63, 90] {
            let row = &flat(&data)[start..start + len];
            for block in [1u32, 2, 3, 8, 32] {
                let mut seen = std::vec![0u32; len];
                each_thread(1, block, || {
                    let mut last = None;
                    let visited = row.block_share().fold_indexed(0, |n, col, x| {
                        assert_eq!(x, (start + col) as f32);
                        assert!(last < Some(col), "in increasing order");
                        last = Some(col);
                        seen[col] += 1;
                        n + 1
                    });
                    assert!(visited <= len);
                });
                assert!(
                    seen.iter().all(|&n| n == 1),
                    "start {start} len {len} block {block}"
                );
            }
        }
    }
}

#[test]
fn a_shares_arg_max_and_arg_min_pick_what_numpy_picks() {
    use crate::combine;
    // Ties, NaNs, all -inf and empty shares, at every phase and several block sizes:
    // each thread's pick, combined across the block, is np.argmax's / np.argmin's.
    let rows: [fn(usize) -> f32; 5] = [
        |i| ((i * 7) % 5) as f32,
        |i| if i % 9 == 4 { f32::NAN } else { (i % 3) as f32 },
        |_| f32::NEG_INFINITY,
        |_| f32::INFINITY,
        |i| -(((i * 11) % 13) as f32),
    ];
    let first = |xs: &[f32], better: fn(f32, f32) -> bool| -> u32 {
        let nan = xs.iter().position(|x| x.is_nan());
        let pick = (0..xs.len()).reduce(|b, i| if better(xs[i], xs[b]) { i } else { b });
        nan.or(pick).map_or(u32::MAX, |i| i as u32)
    };
    for f in rows {
        let data = aligned(80, f);
        for start in 0..4 {
            for len in [0usize, 1, 2, 5, 33, 70] {
                let row = &flat(&data)[start..start + len];
                for block in [1u32, 3, 8, 32] {
                    let (mut hi, mut lo) =
                        ((f32::NEG_INFINITY, u32::MAX), (f32::INFINITY, u32::MAX));
                    each_thread(1, block, || {
                        hi = combine::arg_max(hi, row.block_share().arg_max());
                        lo = combine::arg_min(lo, row.block_share().arg_min());
                    });
                    let what = std::format!("start {start} len {len} block {block}");
                    assert_eq!(hi.1, first(row, |a, b| a > b), "arg_max, {what}");
                    assert_eq!(lo.1, first(row, |a, b| a < b), "arg_min, {what}");
                }
            }
        }
    }
}

#[test]
fn a_tuple_share_reads_its_inputs_together() {
    let (x, y) = (aligned(64, |i| i as f32), aligned(64, |i| 2.0 * i as f32));
    for (xs, ys) in [(0, 0), (1, 1), (0, 3)] {
        let (a, b) = (&flat(&x)[xs..xs + 50], &flat(&y)[ys..ys + 50]);
        let mut total = 0.0;
        each_thread(1, 4, || {
            total += block_share((a, b)).fold(0.0, |s, (p, q)| s + p * q)
        });
        let want: f32 = a.iter().zip(b).map(|(p, q)| p * q).sum();
        assert_eq!(total, want);
    }
}

#[test]
fn a_cached_row_maps_into_an_output_row_in_every_phase() {
    let x = aligned(100, |i| i as f32 + 0.5);
    let w = aligned(100, |i| (i % 7) as f32);
    for (xs, ws, os) in [(0, 0, 0), (1, 1, 1), (2, 0, 2), (0, 1, 3), (3, 3, 0)] {
        for len in [0usize, 1, 2, 5, 8, 31, 64, 93] {
            for block in [1u32, 3, 4, 16] {
                let mut out = aligned(100, |_| -1.0);
                let o = &mut flat_mut(&mut out)[os..os + len];
                let (xr, wr) = (&flat(&x)[xs..xs + len], &flat(&w)[ws..ws + len]);
                let mut sums = Vec::new();
                each_thread(1, block, || {
                    let cached = xr.block_share().cache::<2>();
                    sums.push(cached.fold(0.0, |s, v| s + v));
                    assert_eq!(
                        cached.map_reduce(0.0, |v| v, |a, b| a + b),
                        sums[sums.len() - 1]
                    );
                    // SAFETY: `o` is this test's; every thread writes its own columns.
                    unsafe {
                        write_row(o.as_mut_ptr(), len, 1, (&cached, wr), |c, (v, q)| {
                            v * q + c as f32
                        })
                    };
                });
                for c in 0..len {
                    assert_eq!(
                        o[c],
                        xr[c] * wr[c] + c as f32,
                        "phases {xs}/{ws}/{os} len {len}"
                    );
                }
                assert_eq!(sums.iter().sum::<f32>(), xr.iter().sum::<f32>());
            }
        }
    }
}

#[test]
fn a_strided_row_is_written_one_element_at_a_time() {
    let mut out = [0.0f32; 12];
    each_thread(1, 2, || {
        // SAFETY: columns 0, 3, 6, 9 of `out`, each written by one thread.
        unsafe { write_row(out.as_mut_ptr(), 4, 3, (), |c, ()| c as f32 + 1.0) };
    });
    assert_eq!(
        out,
        [1.0, 0.0, 0.0, 2.0, 0.0, 0.0, 3.0, 0.0, 0.0, 4.0, 0.0, 0.0]
    );
}

#[test]
fn trees_combine_every_element() {
    assert_eq!(tree([1, 2, 3, 4, 5], 0, &|a, b| a + b), 15);
    assert_eq!(tree::<i32, 0>([], 7, &|a, b| a + b), 7);
    assert_eq!(tree([9], 0, &|a: i32, b| a.max(b)), 9);
}

#[test]
fn rows_of_other_element_types_keep_their_lanes() {
    // f64 (2 lanes) cached, mapped into u8 (16 lanes) through a u16 broadcast: every
    // input at its own width; the u8 output's layout decides who writes what.
    let x: Vec<f64> = (0..70).map(|v| v as f64 * 0.5).collect();
    let w: Vec<u16> = (0..70).map(|v| v as u16 % 3).collect();
    for len in [0usize, 3, 17, 40, 69] {
        for block in [1u32, 2, 5] {
            let mut out = std::vec![0u8; 70];
            let (xr, wr) = (&x[1..1 + len], &w[..len]);
            let mut total = 0.0;
            each_thread(1, block, || {
                let cached = xr.block_share().cache::<3>();
                total += cached.map_reduce(0.0, |v| v, |a, b| a + b);
                // SAFETY: `out` is this test's; each thread writes its own columns.
                unsafe {
                    write_row(out.as_mut_ptr(), len, 1, (cached, wr), |_, (v, q)| {
                        (v * 2.0) as u8 + q as u8
                    })
                };
            });
            for c in 0..len {
                assert_eq!(
                    out[c],
                    (xr[c] * 2.0) as u8 + wr[c] as u8,
                    "len {len} block {block}"
                );
            }
            assert_eq!(total, xr.iter().sum::<f64>());
        }
    }
}

#[test]
fn a_scan_writes_the_running_sum_at_every_phase_and_length() {
    let data = aligned(1200, |i| (i % 7) as f32 - 3.0);
    for start in 0..4 {
        let cases = [0usize, 1, 3, 5, 131, 1100].map(|n| (start, n));
        for (out_start, len) in cases.into_iter().chain([((start + 1) % 4, 77)]) {
            let x = &flat(&data)[start..start + len];
            let mut out = aligned(1200, |_| f32::NAN);
            let row = &mut flat_mut(&mut out)[out_start..out_start + len];
            let at = row.as_mut_ptr();
            // SAFETY: the row is this one thread's.
            each_thread(1, 1, || unsafe {
                scan_row(at, len, 1, x, 0.0, |a, b| a + b)
            });
            let mut sum = 0.0;
            for (c, &v) in x.iter().enumerate() {
                sum += v;
                assert_eq!(
                    row[c], sum,
                    "start {start} out {out_start} len {len} col {c}"
                );
            }
        }
    }
}
