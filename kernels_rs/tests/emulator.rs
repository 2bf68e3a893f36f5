//! The bundled kernels on the CPU emulator, through the host entries `#[kernel]`
//! generates (the same functions the emulator library exports), against plain Rust.

use kernels_rs::*;
use oxide_device::__private::emu::{OxideError, OxideLaunch, STATUS_OK};

type Entry = unsafe extern "C" fn(*const OxideLaunch, *const u64, usize, *mut OxideError) -> i32;

fn run(entry: Entry, grid: [u32; 3], block: [u32; 3], args: &[u64]) {
    let launch = OxideLaunch {
        grid,
        block,
        shared_bytes: 0,
    };
    let mut error = OxideError::default();
    // SAFETY: the buffers behind `args` outlive the call.
    let status = unsafe { entry(&launch, args.as_ptr(), args.len(), &mut error) };
    let end = error.message.iter().position(|&b| b == 0).unwrap();
    assert_eq!(
        status,
        STATUS_OK,
        "{}",
        String::from_utf8_lossy(&error.message[..end])
    );
}

fn words<T>(s: &[T]) -> [u64; 2] {
    [s.as_ptr() as u64, s.len() as u64]
}

#[test]
fn matmul_tiled_matches_the_naive_product() {
    let (m, n, k) = (37usize, 45usize, 29usize);
    let a: Vec<f32> = (0..m * k).map(|i| (i % 13) as f32 - 6.0).collect();
    // b is given as the transpose of a row-major n×k matrix (strides (1, k)), as
    // NumPy's `w.T` is: matmul_tiled reads b through its strides.
    let w: Vec<f32> = (0..n * k).map(|i| (i % 7) as f32 * 0.5).collect();
    let c = vec![0.0f32; m * n];
    let array2 = |p: *const f32, shape: [usize; 2], strides: [usize; 2]| {
        [
            p as u64,
            shape[0] as u64,
            shape[1] as u64,
            strides[0] as u64,
            strides[1] as u64,
        ]
    };
    let args = [
        &array2(a.as_ptr(), [m, k], [k, 1])[..],
        &array2(w.as_ptr(), [k, n], [1, k]),
        &array2(c.as_ptr(), [m, n], [n, 1]),
    ]
    .concat();
    let grid = [n.div_ceil(16) as u32, m.div_ceil(16) as u32, 1];
    run(__oxide_host_matmul_tiled, grid, [16, 16, 1], &args);
    for i in 0..m {
        for j in 0..n {
            let want: f32 = (0..k).map(|p| a[i * k + p] * w[j * k + p]).sum();
            assert!((c[i * n + j] - want).abs() < 1e-3, "c[{i},{j}]");
        }
    }
}

#[test]
fn softmax_rows_sum_to_one() {
    let (rows, cols) = (5usize, 300usize);
    let x: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 37) % 101) as f32 / 10.0)
        .collect();
    let out = vec![0.0f32; rows * cols];
    // Each array: pointer, extents (rows, cols), strides (cols, 1).
    let array2 = |p: *const f32| [p as u64, rows as u64, cols as u64, cols as u64, 1];
    let args = [array2(x.as_ptr()), array2(out.as_ptr())].concat();
    run(
        __oxide_host_softmax_rows,
        [rows as u32, 1, 1],
        [128, 1, 1],
        &args,
    );
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let sum: f32 = row.iter().map(|v| (v - max).exp()).sum();
        for c in 0..cols {
            let want = (row[c] - max).exp() / sum;
            assert!((out[r * cols + c] - want).abs() < 1e-6, "out[{r},{c}]");
        }
    }
}

#[test]
fn histogram_and_scale() {
    let x: Vec<u32> = (0..10_000).map(|i| i % 12).collect();
    let bins = vec![0u32; 10];
    let args = [words(&x), words(&bins)].concat();
    run(__oxide_host_histogram, [8, 1, 1], [128, 1, 1], &args);
    let want: Vec<u32> = (0..10)
        .map(|b| x.iter().filter(|&&v| v == b).count() as u32)
        .collect();
    assert_eq!(bins, want);

    let y: Vec<f64> = (0..500).map(f64::from).collect();
    let out = vec![0.0f64; 500];
    let args = [&[2.5f64.to_bits()][..], &words(&y), &words(&out)].concat();
    run(__oxide_host_scale_f64, [2, 1, 1], [256, 1, 1], &args);
    assert!(out.iter().zip(&y).all(|(o, v)| *o == 2.5 * v));
}
