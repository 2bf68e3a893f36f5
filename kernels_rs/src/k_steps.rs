//! The k loop of the f32 GEMM bodies (gemm.rs's `sgemm_tile` and sgemm_tall.rs).

/// The whole k loop over `$k` k-rows, `[$kk]` (0 to BK - 1) a step, in one of two forms
/// that share the steps themselves (`@steps`): each k-row first reads the next row's
/// operands from shared memory (`$frag(stage, kk)`), then computes its own (`$fma(&cur)`);
/// at the last row the next step's tiles land, one barrier, and the next stage's first
/// row is read (on the last step: read and not used). Every thread finished reading a
/// stage before the barrier that ends its step, so that barrier is the only one.
///
/// `staged`: two buffers, step t + 1's global loads in registers while step t computes.
/// `$load_whole(t)` and `$load(t)` return step t's loads (the first unchecked, for steps
/// wholly inside k when `$vector`, the arrays being on the vector path; the second
/// checked, zeros past k), `$store(buf, v)` puts them into a buffer at step t's last
/// row. The last step's loads are zeros (its k0 is past k), stored into the buffer that
/// is not read again: no branch on it. Two loops: the steps whose next loads are whole
/// take `$load_whole`; the rest (the last, a tail of k, arrays off the vector path)
/// take `$load`. In one loop the choice cost a branch, and the checked loads' bounds,
/// zeros and 64-bit indices kept registers and issue slots in every step (ptxas sm_90,
/// 1024 FFMA a step: 1154 instructions at BM = 256, 1451 over the loop's paths at 128;
/// a whole step now 1109 and 1124).
///
/// `async $stages`: `cp.async` into `$stages` shared stages, filled `$stages - 1` steps
/// ahead, with no staging registers. `$copy(t, stage, first)` issues step t's copies
/// into a stage (`first`: step 0, the only one with bounds on k: the caller puts the
/// ragged step first). One commit group a step, empty past the last, so that
/// `wait_group(stages - 2)` at a step's last row always means "step t + 1 has landed".
/// Two loops: the steps that copy, then the last `stages - 1`, which only commit.
///
/// A macro, so that each loop is the calling function's own code.
macro_rules! k_loop {
    (staged $k:expr, [$($kk:literal),*], $vector:expr, $load_whole:expr, $load:expr,
     $store:expr, $frag:expr, $fma:expr) => {{
        let bk = [$($kk),*].len();
        let tiles = $k.div_ceil(bk) as u32;
        let whole = if $vector { ($k / bk) as u32 } else { 0 };
        $store(0, if whole > 0 { $load_whole(0) } else { $load(0) });
        thread::sync_threads();
        let (mut cur, mut stage) = ($frag(0, 0), 0u32);
        let fast = whole.saturating_sub(1).min(tiles);
        k_loop!(@steps 0..fast, 2, stage, [$($kk),*], cur, |t: u32, _| $load_whole(t + 1),
                $store, $frag, $fma);
        k_loop!(@steps fast..tiles, 2, stage, [$($kk),*], cur, |t: u32, _| $load(t + 1),
                $store, $frag, $fma);
    }};
    (async $stages:expr, $k:expr, [$($kk:literal),*], $copy:expr, $frag:expr, $fma:expr) => {{
        const S: u32 = $stages as u32;
        const { assert!(S >= 2) };
        let tiles = $k.div_ceil([$($kk),*].len()) as u32;
        for s in 0..S - 1 {
            if s < tiles {
                $copy(s, s as usize, s == 0);
            }
            oxide_device::mma::cp_async_commit_group();
        }
        oxide_device::mma::cp_async_wait_group::<{ S - 2 }>();
        thread::sync_threads();
        let (mut cur, mut stage) = ($frag(0, 0), 0u32);
        let copying = tiles.saturating_sub(S - 1);
        let land = |_: usize, _: ()| oxide_device::mma::cp_async_wait_group::<{ S - 2 }>();
        k_loop!(@steps 0..copying, S, stage, [$($kk),*], cur, |t: u32, read: u32| {
            // Step t copies step t + S - 1 into the stage step t - 1 read (the one before
            // its own), which every thread finished reading before that step's barrier.
            let write = if read == 0 { S - 1 } else { read - 1 };
            $copy(t + S - 1, write as usize, false);
            oxide_device::mma::cp_async_commit_group();
        }, land, $frag, $fma);
        k_loop!(@steps copying..tiles, S, stage, [$($kk),*], cur,
                |_: u32, _| oxide_device::mma::cp_async_commit_group(), land, $frag, $fma);
    }};
    // Steps `$range` over `$stages` stages, `$stage` the next one read: `$issue(t, stage)`
    // starts step t's part of the traffic and returns what `$land(next stage, it)` needs
    // at the last row.
    (@steps $range:expr, $stages:expr, $stage:ident, [$($kk:literal),*], $cur:ident,
     $issue:expr, $land:expr, $frag:expr, $fma:expr) => {
        for t in $range {
            let (stage, next) = ($stage, if $stage + 1 == $stages { 0 } else { $stage + 1 });
            let issued = $issue(t, stage);
            $stage = next;
            let (stage, next) = (stage as usize, next as usize);
            unrolled!(for kk in [$($kk),*] {
                let nxt = if kk + 1 < [$($kk),*].len() {
                    $frag(stage, kk + 1)
                } else {
                    $land(next, issued);
                    thread::sync_threads();
                    $frag(next, 0)
                };
                $fma(&$cur);
                $cur = nxt;
            });
        }
    };
}

pub(crate) use k_loop;
