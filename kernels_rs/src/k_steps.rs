//! The k loop of the f32 GEMM bodies (gemm.rs's `sgemm_tile` and sgemm_tall.rs).

/// The whole k loop over `$k` k-rows, `[$kk]` (0 to BK - 1) a step, through two
/// shared-memory buffers. `$load_whole(t)` and `$load(t)` return step t's global loads
/// (the first unchecked, for steps wholly inside k when `$vector`, the arrays being on
/// the vector path; the second checked, zeros past k), `$store(buf, v)` puts them into a
/// buffer, `$frag(buf, kk)` reads k-row kk's operands from one, and `$fma(&cur)` computes
/// a row.
///
/// Step t computes its rows from buffer t % 2 while step t + 1's loads wait in
/// registers. Each row first reads the next row's operands, then computes its own. At the
/// last row the staged values go to the other buffer, which every thread finished reading
/// before the previous step's barrier, and after this step's barrier its first row is
/// read (on the last step: read and not used). The last step's loads are zeros (its k0 is
/// past k), stored into the buffer that is not read again: no branch on it.
///
/// Two loops over that body: the steps whose next loads are whole take `$load_whole`; the
/// rest (the last, a tail of k, arrays off the vector path) take `$load`. In one loop the
/// choice cost a branch, and the checked loads' bounds, zeros and 64-bit indices kept
/// registers and issue slots in every step (ptxas sm_90, 1024 FFMA a step: 1154
/// instructions at BM = 256, 1451 over the loop's paths at 128; a whole step now 1109
/// and 1124). A macro, so that each loop is the calling function's own code.
macro_rules! k_loop {
    ($k:expr, [$($kk:literal),*], $vector:expr, $load_whole:expr, $load:expr, $store:expr,
     $frag:expr, $fma:expr) => {{
        let bk = [$($kk),*].len();
        let tiles = $k.div_ceil(bk) as u32;
        let whole = if $vector { ($k / bk) as u32 } else { 0 };
        $store(0, if whole > 0 { $load_whole(0) } else { $load(0) });
        thread::sync_threads();
        let mut cur = $frag(0, 0);
        let fast = whole.saturating_sub(1).min(tiles);
        k_loop!(@steps 0..fast, [$($kk),*], cur, $load_whole, $store, $frag, $fma);
        k_loop!(@steps fast..tiles, [$($kk),*], cur, $load, $store, $frag, $fma);
    }};
    (@steps $range:expr, [$($kk:literal),*], $cur:ident, $load:expr, $store:expr,
     $frag:expr, $fma:expr) => {
        for t in $range {
            let buf = t as usize % 2;
            let staged = $load(t + 1);
            unrolled!(for kk in [$($kk),*] {
                let nxt = if kk + 1 < [$($kk),*].len() {
                    $frag(buf, kk + 1)
                } else {
                    $store(1 - buf, staged);
                    thread::sync_threads();
                    $frag(1 - buf, 0)
                };
                $fma(&$cur);
                $cur = nxt;
            });
        }
    };
}

pub(crate) use k_loop;
