//! The k loop of the f32 GEMM bodies (gemm.rs's `sgemm_tile` and sgemm_tall.rs).

/// Steps `$range` of a k loop through two shared-memory buffers, `[$kk]` (0 to BK - 1)
/// k-rows a step. Step t computes its rows from buffer t % 2 while `$load(t + 1)`'s
/// values wait in registers. Each row first reads the next row's operands
/// (`$frag(buf, kk + 1)`), then runs `$fma(&$cur)` on its own. At the last row the staged
/// values go to the other buffer (`$store`), which every thread finished reading before
/// the previous step's barrier, and after this step's barrier its first row is read (on
/// the last step: read and not used). The last step's loads are zeros (its k0 is past
/// k), stored into the buffer that is not read again: no branch on it. A macro, so that
/// each call is a loop of the calling function's own, with its own loads.
macro_rules! k_steps {
    ($range:expr, [$($kk:literal),*], $cur:ident, $load:expr, $store:expr, $frag:expr,
     $fma:expr) => {
        for t in $range {
            let buf = t as usize % 2;
            let staged = $load(t + 1);
            let last = [$($kk),*].len() - 1;
            unrolled!(for kk in [$($kk),*] {
                let nxt = if kk < last {
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

pub(crate) use k_steps;
