//! The emulator's tensor-core instructions against hand-computed fragments: the
//! PTX ISA's fragment figures for `mma.m16n8k16` / `m16n8k8`, `ldmatrix`'s and
//! `stmatrix`'s row distribution, and `cp.async`'s commit/wait groups.

// The test kernels are `unsafe fn` for their `&mut [T]` outputs; only the emulator
// calls them, through the launch entries below.
#![allow(clippy::missing_safety_doc)]

use oxide_device::__private::emu::{HostEntry, OxideLaunch, STATUS_OK, STATUS_TRAP, call};
use oxide_device::mma::*;
use oxide_device::prelude::*;
use oxide_device::{bf16, f16};

/// `entry` on one block of `threads` threads with a one-element `f32` output traps, with a
/// message that contains each of `needles`.
fn assert_refused(entry: HostEntry, threads: u32, needles: &[&str]) {
    let out = [0.0f32; 1];
    let (status, m) = run(entry, threads, &slice(&out));
    assert_eq!(status, STATUS_TRAP, "{m}");
    for needle in needles {
        assert!(m.contains(needle), "no {needle:?} in {m}");
    }
}

fn run(entry: HostEntry, threads: u32, args: &[u64]) -> (i32, String) {
    // SAFETY: the tests pass buffers that outlive the call.
    let (status, e) = unsafe { call(entry, &OxideLaunch::linear(1, threads, 0), args) };
    (status, e.text())
}

fn slice<T>(s: &[T]) -> [u64; 2] {
    [s.as_ptr() as u64, s.len() as u64]
}

#[test]
fn fragment_coordinates_match_the_ptx_figures() {
    // Lane 5: groupID 1, threadID_in_group 1 (PTX ISA, "mma.m16n8k16" figures).
    assert_eq!(frag_a16_coords(5, 0), [(1, 2), (1, 3)]);
    assert_eq!(frag_a16_coords(5, 1), [(9, 2), (9, 3)]);
    assert_eq!(frag_a16_coords(5, 2), [(1, 10), (1, 11)]);
    assert_eq!(frag_a16_coords(5, 3), [(9, 10), (9, 11)]);
    assert_eq!(frag_b16_coords(5, 0), [(2, 1), (3, 1)]);
    assert_eq!(frag_b16_coords(5, 1), [(10, 1), (11, 1)]);
    assert_eq!(frag_c_coords(5, 0), (1, 2));
    assert_eq!(frag_c_coords(5, 3), (9, 3));
    assert_eq!(frag_c_coords(31, 3), (15, 7));
    // tf32 m16n8k8, lane 30: groupID 7, threadID_in_group 2.
    assert_eq!(frag_a_tf32_coords(30, 0), (7, 2));
    assert_eq!(frag_a_tf32_coords(30, 1), (15, 2));
    assert_eq!(frag_a_tf32_coords(30, 2), (7, 6));
    assert_eq!(frag_a_tf32_coords(30, 3), (15, 6));
    assert_eq!(frag_b_tf32_coords(30, 1), (6, 7));
}

/// One warp: fragments of row-major `a` (16×16 bf16 bits) and `b` (16×8) built by the
/// coordinate helpers, `d = a·b + c`, written row-major (16×8).
#[kernel]
pub unsafe fn mma_bf16_tile(a: &[u16], b: &[u16], c: &[f32], d: &mut [f32], f16_inputs: bool) {
    let lane = warp::lane_id();
    let fa: FragA16 = core::array::from_fn(|r| {
        let [(r0, c0), (r1, c1)] = frag_a16_coords(lane, r as u32);
        pack2(a[(r0 * 16 + c0) as usize], a[(r1 * 16 + c1) as usize])
    });
    let fb: FragB16 = core::array::from_fn(|r| {
        let [(k0, n0), (k1, n1)] = frag_b16_coords(lane, r as u32);
        pack2(b[(k0 * 8 + n0) as usize], b[(k1 * 8 + n1) as usize])
    });
    let at = |i: u32| {
        let (r, col) = frag_c_coords(lane, i);
        (r * 8 + col) as usize
    };
    let fc: FragC = core::array::from_fn(|i| c[at(i as u32)]);
    let out = unsafe {
        if f16_inputs {
            mma_m16n8k16_f32_f16(fc, fa, fb)
        } else {
            mma_m16n8k16_f32_bf16(fc, fa, fb)
        }
    };
    for (i, v) in out.into_iter().enumerate() {
        d[at(i as u32)] = v;
    }
}

fn reference(a: &[f32], b: &[f32], c: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    (0..m * n)
        .map(|ij| {
            let (i, j) = (ij / n, ij % n);
            c[ij] + (0..k).map(|l| a[i * k + l] * b[l * n + j]).sum::<f32>()
        })
        .collect()
}

#[test]
fn mma_m16n8k16_multiplies_bf16_and_f16_tiles() {
    // Small integers and halves: exact in bf16, f16 and every sum here.
    let af: Vec<f32> = (0..256)
        .map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.5)
        .collect();
    let bf: Vec<f32> = (0..128).map(|i| (i * 5 % 9) as f32 - 4.0).collect();
    let c: Vec<f32> = (0..128).map(|i| i as f32).collect();
    let want = reference(&af, &bf, &c, 16, 8, 16);
    for f16_inputs in [false, true] {
        let bits = |x: &[f32]| -> Vec<u16> {
            x.iter()
                .map(|&v| {
                    if f16_inputs {
                        f16::from_f32(v).to_bits()
                    } else {
                        bf16::from_f32(v).to_bits()
                    }
                })
                .collect()
        };
        let (a, b) = (bits(&af), bits(&bf));
        let d = vec![f32::NAN; 128];
        let args = [
            &slice(&a)[..],
            &slice(&b),
            &slice(&c),
            &slice(&d),
            &[f16_inputs as u64],
        ]
        .concat();
        let (status, m) = run(__oxide_host_mma_bf16_tile, 32, &args);
        assert_eq!(status, STATUS_OK, "{m}");
        assert_eq!(d, want, "f16 inputs: {f16_inputs}");
    }
}

#[test]
fn mma_refuses_a_partial_warp_naming_the_instruction() {
    let (a, b, c) = (vec![0u16; 256], vec![0u16; 128], vec![0.0f32; 128]);
    let d = vec![0.0f32; 128];
    let args = [&slice(&a)[..], &slice(&b), &slice(&c), &slice(&d), &[0]].concat();
    let (status, m) = run(__oxide_host_mma_bf16_tile, 16, &args);
    assert_eq!(status, STATUS_TRAP);
    assert!(
        m.contains("mma.sync.m16n8k16.bf16") && m.contains("32 lanes"),
        "{m}"
    );
}

/// tf32: `a` 16×8, `b` 8×8, `d = a·b` (16×8), operands rounded with `cvt_rna_tf32`.
#[kernel]
pub unsafe fn mma_tf32_tile(a: &[f32], b: &[f32], d: &mut [f32]) {
    let lane = warp::lane_id();
    let fa: FragATf32 = core::array::from_fn(|r| {
        let (row, col) = frag_a_tf32_coords(lane, r as u32);
        cvt_rna_tf32(a[(row * 8 + col) as usize])
    });
    let fb: FragBTf32 = core::array::from_fn(|r| {
        let (k, n) = frag_b_tf32_coords(lane, r as u32);
        cvt_rna_tf32(b[(k * 8 + n) as usize])
    });
    let out = unsafe { mma_m16n8k8_f32_tf32([0.0; 4], fa, fb) };
    for (i, v) in out.into_iter().enumerate() {
        let (r, col) = frag_c_coords(lane, i as u32);
        d[(r * 8 + col) as usize] = v;
    }
}

#[test]
fn mma_m16n8k8_multiplies_tf32_tiles() {
    let a: Vec<f32> = (0..128).map(|i| (i % 13) as f32 - 6.0).collect();
    let b: Vec<f32> = (0..64).map(|i| ((i % 7) as f32 - 3.0) * 0.25).collect();
    let want = reference(&a, &b, &[0.0; 128], 16, 8, 8);
    let d = vec![f32::NAN; 128];
    let (status, m) = run(
        __oxide_host_mma_tf32_tile,
        32,
        &[slice(&a), slice(&b), slice(&d)].concat(),
    );
    assert_eq!(status, STATUS_OK, "{m}");
    assert_eq!(d, want);
}

#[test]
fn tf32_rounds_to_nearest_ties_away() {
    // 1 + 2^-11 is halfway between two tf32 values (10 fraction bits): away from zero.
    assert_eq!(
        cvt_rna_tf32(1.0 + 2f32.powi(-11)),
        (1.0f32 + 2f32.powi(-10)).to_bits()
    );
    assert_eq!(
        cvt_rna_tf32(-(1.0 + 2f32.powi(-11))),
        (-(1.0f32 + 2f32.powi(-10))).to_bits()
    );
    assert_eq!(cvt_rna_tf32(1.0 + 2f32.powi(-12)), 1.0f32.to_bits());
}

/// Four 8×8 matrices of u16 in shared memory (matrix i at rows 8i..8i+8 of a 32×8
/// tile holding 0..256); each lane loads with `ldmatrix` (x1/x2/x4, `.trans` when
/// `mode >= 3`) and writes its registers to `out[lane·4 + i]`; then `stmatrix` of the
/// same kind writes them back to a second tile, copied to `back`.
#[kernel]
pub unsafe fn ldmatrix_modes(mode: u32, out: &mut [u32], back: &mut [u16]) {
    static TILE: SharedArray<u16, 256> = SharedArray::UNINIT;
    static BACK: SharedArray<u16, 256> = SharedArray::UNINIT;
    let lane = warp::lane_id() as usize;
    unsafe {
        for j in 0..8 {
            TILE.write(lane * 8 + j, (lane * 8 + j) as u16);
            BACK.write(lane * 8 + j, 0xffff);
        }
    }
    thread::sync_threads();
    let row = unsafe { TILE.as_ptr().add(lane * 8) };
    let brow = unsafe { BACK.as_mut_ptr().add(lane * 8) };
    let mut regs = [0u32; 4];
    // Load with `$ld` into the first registers, and store what it loaded with `$st`.
    macro_rules! round_trip {
        ($ld:ident, $st:ident) => {{
            let r = $ld(row);
            regs[..r.len()].copy_from_slice(&r);
            $st(brow, r)
        }};
    }
    unsafe {
        match mode {
            0 => round_trip!(ldmatrix_x1, stmatrix_x1),
            1 => round_trip!(ldmatrix_x2, stmatrix_x2),
            2 => round_trip!(ldmatrix_x4, stmatrix_x4),
            3 => round_trip!(ldmatrix_x1_trans, stmatrix_x1_trans),
            4 => round_trip!(ldmatrix_x2_trans, stmatrix_x2_trans),
            _ => round_trip!(ldmatrix_x4_trans, stmatrix_x4_trans),
        }
    }
    thread::sync_threads();
    for i in 0..4 {
        out[lane * 4 + i] = regs[i];
    }
    for j in 0..8 {
        back[lane * 8 + j] = unsafe { BACK.read(lane * 8 + j) };
    }
}

#[test]
fn ldmatrix_distributes_rows_and_stmatrix_inverts_it() {
    for mode in 0..6u32 {
        let (count, trans) = ([1usize, 2, 4][mode as usize % 3], mode >= 3);
        let out = vec![0u32; 128];
        let back = vec![0u16; 256];
        let (status, m) = run(
            __oxide_host_ldmatrix_modes,
            32,
            &[&[mode as u64][..], &slice(&out), &slice(&back)].concat(),
        );
        assert_eq!(status, STATUS_OK, "{m}");
        for lane in 0..32usize {
            for i in 0..count {
                // Element (r, c) of matrix i is 64i + 8r + c; lane l holds row l/4,
                // columns 2(l%4) and +1 (transposed: column l/4, rows 2(l%4) and +1).
                let (r, c) = (lane / 4, 2 * (lane % 4));
                let (lo, hi) = if trans {
                    (64 * i + 8 * c + r, 64 * i + 8 * (c + 1) + r)
                } else {
                    (64 * i + 8 * r + c, 64 * i + 8 * r + c + 1)
                };
                assert_eq!(
                    out[lane * 4 + i],
                    lo as u32 | (hi as u32) << 16,
                    "mode {mode} lane {lane} reg {i}"
                );
            }
        }
        for (e, &v) in back.iter().enumerate() {
            let want = if e < 64 * count { e as u16 } else { 0xffff };
            assert_eq!(v, want, "mode {mode}: stmatrix element {e}");
        }
    }
}

/// Thread t copies `src[4t..4t+4]` in two groups (two 8-byte copies), and records what
/// shared memory holds after waiting for all but one group, then for all.
#[kernel]
pub unsafe fn cp_async_groups(src: &[u32], seen: &mut [u32], tail: u32) {
    static TILE: SharedArray<u32, 256> = SharedArray::UNINIT;
    let t = thread::threadIdx_x() as usize;
    unsafe {
        for j in 0..4 {
            TILE.write(4 * t + j, 0xdead);
        }
        let dst = TILE.as_mut_ptr().add(4 * t) as *mut [u32; 2];
        let from = src.as_ptr().add(4 * t) as *const [u32; 2];
        cp_async_ca(dst, from);
        cp_async_commit_group();
        cp_async_ca_zfill(dst.add(1), from.add(1), tail);
        cp_async_commit_group();
        cp_async_wait_group::<1>();
        for j in 0..4 {
            seen[8 * t + j] = TILE.read(4 * t + j);
        }
        cp_async_wait_group::<0>();
        for j in 0..4 {
            seen[8 * t + 4 + j] = TILE.read(4 * t + j);
        }
    }
}

#[test]
fn cp_async_lands_when_its_group_is_waited_for() {
    let src: Vec<u32> = (100..164).collect();
    for tail in [8u32, 4, 0] {
        let seen = vec![0u32; 128];
        let (status, m) = run(
            __oxide_host_cp_async_groups,
            16,
            &[&slice(&src)[..], &slice(&seen), &[tail as u64]].concat(),
        );
        assert_eq!(status, STATUS_OK, "{m}");
        for t in 0..16usize {
            let s = &src[4 * t..4 * t + 4];
            assert_eq!(
                seen[8 * t..8 * t + 4],
                [s[0], s[1], 0xdead, 0xdead],
                "thread {t}: second group not waited for yet"
            );
            let third = if tail >= 4 { s[2] } else { 0 };
            let fourth = if tail >= 8 { s[3] } else { 0 };
            assert_eq!(
                seen[8 * t + 4..8 * t + 8],
                [s[0], s[1], third, fourth],
                "thread {t}, src_bytes {tail}"
            );
        }
    }
}

#[kernel]
pub unsafe fn warpgroup_product(out: &mut [f32]) {
    let mut acc = [0.0f32; 32];
    unsafe {
        oxide_device::wgmma::wgmma_fence();
        oxide_device::wgmma::wgmma_m64n64k16_f32_bf16::<0, 0>(&mut acc, 0, 0, false);
    }
    out[0] = acc[0];
}

#[kernel]
pub unsafe fn warpgroup_few_columns(out: &mut [f32]) {
    let mut acc = [0.0f32; 8];
    unsafe { oxide_device::wgmma::wgmma_m64n16k16_f32_bf16::<1, 0>(&mut acc, 0, 0, false) };
    oxide_device::wgmma::wgmma_wait_group_acc::<0>(&mut acc);
    out[0] = acc[0];
}

#[kernel]
pub unsafe fn warpgroup_wait_naming_acc(out: &mut [f32]) {
    let mut acc = [0.0f32; 128];
    oxide_device::wgmma::wgmma_wait_group_acc::<0>(&mut acc);
    out[0] = acc[0];
}

#[kernel]
pub unsafe fn bulk_store_group(out: &mut [f32]) {
    oxide_device::tma::cp_async_bulk_commit_group();
    out[0] = 1.0;
}

#[kernel]
pub unsafe fn block_barrier_init(out: &mut [f32]) {
    static mut BAR: oxide_device::barrier::Barrier = oxide_device::barrier::Barrier::UNINIT;
    unsafe { oxide_device::barrier::mbarrier_init(&raw mut BAR, 32) };
    out[0] = 1.0;
}

/// What the emulator refuses, by the message that names it: each kernel with its block
/// size and the phrases its refusal must contain.
#[test]
fn the_emulator_refuses_what_it_does_not_emulate_naming_it() {
    let cases: [(HostEntry, u32, &[&str]); 5] = [
        (
            __oxide_host_warpgroup_product,
            128,
            &["wgmma.fence is not emulated", "mma.sync"],
        ),
        (
            __oxide_host_warpgroup_few_columns,
            128,
            &["wgmma.mma_async is not emulated"],
        ),
        (
            __oxide_host_warpgroup_wait_naming_acc,
            128,
            &["wgmma.wait_group is not emulated"],
        ),
        (
            __oxide_host_bulk_store_group,
            32,
            &["cp.async.bulk.commit_group is not emulated"],
        ),
        (
            __oxide_host_block_barrier_init,
            32,
            &[
                "mbarrier.init is not emulated",
                "sm_80 or newer GPU",
                "sync_threads",
            ],
        ),
    ];
    for (entry, threads, needles) in cases {
        assert_refused(entry, threads, needles);
    }
}
