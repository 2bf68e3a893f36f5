//! `unrolled!`: a loop over listed constants, written out as straight-line code.

/// `body` once per listed value of `i`, as straight-line code:
/// `unrolled!(for j in [0, 1, 2, 3] { acc[j] += a[j] * b; })`. An array indexed only by
/// these constants stays in registers; LLVM does not always unroll a loop whose body is
/// large, and one dynamic index sends the whole array to local memory. (`#[unroll]`, the
/// attribute cuda-oxide's kernels carry, is accepted as a hint and changes nothing.)
#[macro_export]
macro_rules! unrolled {
    (for $i:ident in [$($n:literal),*] $body:block) => {
        $({
            #[allow(clippy::identity_op, clippy::erasing_op)]
            let $i: usize = $n;
            $body
        })*
    };
}
