//! GPU backend of `wgmma`: the sm_90 warpgroup and bulk-copy instructions as inline
//! PTX (LLVM 22 has no `wgmma` intrinsic). As in `mma`, nothing here is `pure`.

use core::arch::asm;

/// Safe functions that are one instruction with no operands, or with one immediate `N`
/// (`{n}`); the comment over each group of rows says why they ask nothing of the caller.
macro_rules! asm_insn {
    ($($name:ident = $insn:literal;)*) => {$(
        #[inline(always)]
        pub(crate) fn $name() {
            // SAFETY: given over the row.
            unsafe { asm!($insn, options(nostack, preserves_flags)) }
        }
    )*};
    ($($name:ident<N> = $insn:literal;)*) => {$(
        #[inline(always)]
        pub(crate) fn $name<const N: u32>() {
            // SAFETY: given over the row.
            unsafe { asm!($insn, n = const N, options(nostack, preserves_flags)) }
        }
    )*};
}

asm_insn! {
    // The caller's warpgroup executes these together (`wgmma` docs).
    wgmma_fence = "wgmma.fence.sync.aligned;";
    wgmma_commit_group = "wgmma.commit_group.sync.aligned;";
    // Closes this thread's group of bulk copies.
    cp_async_bulk_commit_group = "cp.async.bulk.commit_group;";
    // A fence.
    fence_proxy_async_shared = "fence.proxy.async.shared::cta;";
}

asm_insn! {
    // As `wgmma_fence`.
    wgmma_wait_group<N> = "wgmma.wait_group.sync.aligned {n};";
    // Waits on this thread's own bulk groups.
    cp_async_bulk_wait_group<N> = "cp.async.bulk.wait_group {n};";
    cp_async_bulk_wait_group_read<N> = "cp.async.bulk.wait_group.read {n};";
    // The caller's warpgroup executes these together (`wgmma::setmaxnreg_inc`).
    setmaxnreg_inc<N> = "setmaxnreg.inc.sync.aligned.u32 {n};";
    setmaxnreg_dec<N> = "setmaxnreg.dec.sync.aligned.u32 {n};";
}

/// `asm!` whose first operands are `acc[0]` … `acc[N-1]` (`{0}`, `{1}`, … in the
/// template), read and written in registers, followed by `$rest`: the one place the
/// accumulator operands are spelled out. `N` is 8, 32, 64 or 128 (an m64n16, m64n64,
/// m64n128 or m64n256 product); the template names them with [`acc_list`].
macro_rules! asm_acc {
    ($acc:ident, 8, $($rest:tt)*) => {
        asm_acc!(@ $acc [0 1 2 3 4 5 6 7], $($rest)*)
    };
    ($acc:ident, 32, $($rest:tt)*) => {
        asm_acc!(@ $acc [
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
        ], $($rest)*)
    };
    ($acc:ident, 64, $($rest:tt)*) => {
        asm_acc!(@ $acc [
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19
            20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39
            40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59
            60 61 62 63
        ], $($rest)*)
    };
    ($acc:ident, 128, $($rest:tt)*) => {
        asm_acc!(@ $acc [
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19
            20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39
            40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59
            60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79
            80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99
            100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119
            120 121 122 123 124 125 126 127
        ], $($rest)*)
    };
    (@ $acc:ident [$($i:literal)*], $template:expr, $($rest:tt)*) => {
        asm!($template, $(inout(reg32) $acc[$i],)* $($rest)*)
    };
}

/// The template text naming [`asm_acc`]'s `N` accumulator operands, `{0}, {1}, …`.
macro_rules! acc_list {
    (8) => {
        "{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}"
    };
    (32) => {
        "{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}, {24}, {25}, {26}, {27}, {28}, {29}, {30}, {31}"
    };
    (64) => {
        "{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}, {24}, {25}, {26}, {27}, {28}, {29}, {30}, {31}, {32}, {33}, {34}, {35}, {36}, {37}, {38}, {39}, {40}, {41}, {42}, {43}, {44}, {45}, {46}, {47}, {48}, {49}, {50}, {51}, {52}, {53}, {54}, {55}, {56}, {57}, {58}, {59}, {60}, {61}, {62}, {63}"
    };
    (128) => {
        "{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16}, {17}, {18}, {19}, {20}, {21}, {22}, {23}, {24}, {25}, {26}, {27}, {28}, {29}, {30}, {31}, {32}, {33}, {34}, {35}, {36}, {37}, {38}, {39}, {40}, {41}, {42}, {43}, {44}, {45}, {46}, {47}, {48}, {49}, {50}, {51}, {52}, {53}, {54}, {55}, {56}, {57}, {58}, {59}, {60}, {61}, {62}, {63}, {64}, {65}, {66}, {67}, {68}, {69}, {70}, {71}, {72}, {73}, {74}, {75}, {76}, {77}, {78}, {79}, {80}, {81}, {82}, {83}, {84}, {85}, {86}, {87}, {88}, {89}, {90}, {91}, {92}, {93}, {94}, {95}, {96}, {97}, {98}, {99}, {100}, {101}, {102}, {103}, {104}, {105}, {106}, {107}, {108}, {109}, {110}, {111}, {112}, {113}, {114}, {115}, {116}, {117}, {118}, {119}, {120}, {121}, {122}, {123}, {124}, {125}, {126}, {127}"
    };
}

/// `wgmma.wait_group.sync.aligned N` that names the accumulators as read and written
/// (in a PTX comment), so that LLVM schedules no use of them above the wait: ptxas
/// serialises every wgmma of a kernel where a plain instruction reads an accumulator
/// before its wait (its warning C7514). One function per accumulator count.
macro_rules! wait_group_acc {
    ($($name:ident: $n:tt;)*) => {$(
        #[inline(always)]
        pub(crate) fn $name<const N: u32>(acc: &mut [f32; $n]) {
            // SAFETY: the caller's warpgroup executes it together (`wgmma` docs); the
            // operands are only named in a comment.
            unsafe {
                asm_acc!(
                    acc, $n,
                    concat!("wgmma.wait_group.sync.aligned {n}; /* ", acc_list!($n), " */"),
                    n = const N,
                    options(nostack, preserves_flags)
                )
            }
        }
    )*};
}

wait_group_acc! {
    wgmma_wait_group_acc8: 8;
    wgmma_wait_group_acc32: 32;
    wgmma_wait_group_acc64: 64;
    wgmma_wait_group_acc128: 128;
}

/// `wgmma.mma_async.sync.aligned.{shape}.f32.{ty}.{ty}` over `N` accumulators a thread,
/// read and written: `ss`, A and B from shared memory (descriptors); `rs`, A from
/// registers (four `bf16x2`/`f16x2` a thread: its warp's 16 rows, laid out as
/// `mma.m16n8k16`'s A) and B from shared memory. The caller (the `wgmma` function of
/// the same shape) upholds the safety contract.
macro_rules! wgmma {
    ($($name:ident: $form:ident $n:tt, $shape:literal, $ty:literal;)*) => {$(
        wgmma!(@ $form $name, $n, concat!(
            "{{ .reg .pred p; setp.ne.b32 p, {sd}, 0; ",
            "wgmma.mma_async.sync.aligned.", $shape, ".f32.", $ty, ".", $ty, " ",
            "{{", acc_list!($n), "}}, "
        ));
    )*};
    (@ ss $name:ident, $n:tt, $head:expr) => {
        #[inline(always)]
        pub(crate) unsafe fn $name<const TRANS_A: u32, const TRANS_B: u32>(
            acc: &mut [f32; $n],
            desc_a: u64,
            desc_b: u64,
            accumulate: bool,
        ) {
            // SAFETY: upheld by the caller.
            unsafe {
                asm_acc!(
                    acc, $n, concat!($head, "{da}, {db}, p, 1, 1, {ta}, {tb}; }}"),
                    da = in(reg64) desc_a, db = in(reg64) desc_b,
                    sd = in(reg32) accumulate as u32, ta = const TRANS_A, tb = const TRANS_B,
                    options(nostack, preserves_flags),
                );
            }
        }
    };
    (@ rs $name:ident, $n:tt, $head:expr) => {
        #[inline(always)]
        pub(crate) unsafe fn $name<const TRANS_B: u32>(
            acc: &mut [f32; $n],
            a: [u32; 4],
            desc_b: u64,
            accumulate: bool,
        ) {
            // SAFETY: upheld by the caller.
            unsafe {
                asm_acc!(
                    acc, $n, concat!($head, "{{{a0}, {a1}, {a2}, {a3}}}, {db}, p, 1, 1, {tb}; }}"),
                    a0 = in(reg32) a[0], a1 = in(reg32) a[1], a2 = in(reg32) a[2], a3 = in(reg32) a[3],
                    db = in(reg64) desc_b, sd = in(reg32) accumulate as u32, tb = const TRANS_B,
                    options(nostack, preserves_flags),
                );
            }
        }
    };
}

wgmma! {
    wgmma_m64n16k16_bf16: ss 8, "m64n16k16", "bf16";
    wgmma_m64n64k16_bf16: ss 32, "m64n64k16", "bf16";
    wgmma_m64n64k16_f16: ss 32, "m64n64k16", "f16";
    wgmma_m64n128k16_bf16: ss 64, "m64n128k16", "bf16";
    wgmma_m64n128k16_f16: ss 64, "m64n128k16", "f16";
    wgmma_m64n256k16_bf16: ss 128, "m64n256k16", "bf16";
    wgmma_m64n64k16_bf16_rs: rs 32, "m64n64k16", "bf16";
    wgmma_m64n64k16_f16_rs: rs 32, "m64n64k16", "f16";
    wgmma_m64n128k16_bf16_rs: rs 64, "m64n128k16", "bf16";
    wgmma_m64n128k16_f16_rs: rs 64, "m64n128k16", "f16";
}

/// The shared-state-space address of a generic pointer into shared memory, in the 32
/// bits the instructions take ([`super::cvta_to_shared`], truncated: the window is
/// smaller than 4 GiB).
#[inline(always)]
pub(crate) fn shared_addr<T>(p: *const T) -> u32 {
    super::cvta_to_shared(p.cast()) as u32
}

// init, arrive, inval and test_wait are spelled `.shared.b64` (PTX 7.0, sm_80), not
// `.shared::cta.b64` (PTX 7.8): the same state space, and the sm_80 build, whose PTX
// says `.version 7.0`, takes them. expect_tx and try_wait exist from sm_90 only.
#[inline(always)]
pub(crate) unsafe fn mbarrier_init(bar: *mut u64, count: u32) {
    // SAFETY: `bar` is an 8-byte-aligned shared word (caller).
    unsafe {
        asm!("mbarrier.init.shared.b64 [{b}], {c};", b = in(reg32) shared_addr(bar),
             c = in(reg32) count, options(nostack, preserves_flags));
    }
}

#[inline(always)]
pub(crate) unsafe fn mbarrier_arrive(bar: *mut u64) -> u64 {
    let state: u64;
    // SAFETY: as `mbarrier_init`, initialised.
    unsafe {
        asm!("mbarrier.arrive.shared.b64 {s}, [{b}];", s = out(reg64) state,
             b = in(reg32) shared_addr(bar), options(nostack, preserves_flags));
    }
    state
}

#[inline(always)]
pub(crate) unsafe fn mbarrier_arrive_expect_tx(bar: *mut u64, bytes: u32) -> u64 {
    let state: u64;
    // SAFETY: as `mbarrier_arrive`.
    unsafe {
        asm!("mbarrier.arrive.expect_tx.shared::cta.b64 {s}, [{b}], {n};", s = out(reg64) state,
             b = in(reg32) shared_addr(bar), n = in(reg32) bytes, options(nostack, preserves_flags));
    }
    state
}

#[inline(always)]
pub(crate) unsafe fn mbarrier_inval(bar: *mut u64) {
    // SAFETY: as `mbarrier_init`.
    unsafe {
        asm!("mbarrier.inval.shared.b64 [{b}];", b = in(reg32) shared_addr(bar),
             options(nostack, preserves_flags));
    }
}

/// The mbarrier waits, each an instruction whose predicate (carried out as 0 or 1) says
/// whether the phase named by `$arg` has completed.
macro_rules! mbarrier_wait {
    ($($name:ident($arg:ident: $t:ty, $reg:ident) = $insn:literal;)*) => {$(
        #[inline(always)]
        pub(crate) unsafe fn $name(bar: *mut u64, $arg: $t) -> bool {
            let done: u32;
            // SAFETY: `bar` is an initialised mbarrier (caller).
            unsafe {
                asm!(concat!("{{ .reg .pred p; ", $insn, " p, [{b}], {a}; selp.u32 {d}, 1, 0, p; }}"),
                     d = out(reg32) done, b = in(reg32) shared_addr(bar), a = in($reg) $arg,
                     options(nostack, preserves_flags));
            }
            done != 0
        }
    )*};
}

mbarrier_wait! {
    mbarrier_try_wait_parity(parity: u32, reg32) = "mbarrier.try_wait.parity.shared::cta.b64";
    mbarrier_test_wait(token: u64, reg64) = "mbarrier.test_wait.shared.b64";
    mbarrier_try_wait(token: u64, reg64) = "mbarrier.try_wait.shared::cta.b64";
}

/// `cp.async.bulk.tensor.{dim}…mbarrier::complete_tx::bytes`: a box of a tensor map
/// from global memory to `dst`, counted on `bar`; the coordinates are the operands
/// `$c = $e`, innermost first.
macro_rules! tensor_g2s {
    ($name:ident($($p:ident: $t:ty),*), $dim:literal, [$c0:ident = $e0:expr $(, $c:ident = $e:expr)*]) => {
        #[inline(always)]
        pub(crate) unsafe fn $name(dst: *mut u8, tensor_map: *const u8, $($p: $t,)* bar: *mut u64) {
            // SAFETY: upheld by the caller (`tma::` of the same name).
            unsafe {
                asm!(concat!("cp.async.bulk.tensor.", $dim,
                             ".shared::cluster.global.tile.mbarrier::complete_tx::bytes [{d}], [{m}, {{{",
                             stringify!($c0), "}" $(, ", {", stringify!($c), "}")*, "}}], [{b}];"),
                     d = in(reg32) shared_addr(dst), m = in(reg64) tensor_map,
                     $c0 = in(reg32) $e0, $($c = in(reg32) $e,)*
                     b = in(reg32) shared_addr(bar), options(nostack, preserves_flags));
            }
        }
    };
}

tensor_g2s!(cp_async_bulk_tensor_2d_g2s(x: i32, y: i32), "2d", [x = x, y = y]);
tensor_g2s!(
    cp_async_bulk_tensor_4d_g2s(coords: [i32; 4]), "4d",
    [c0 = coords[0], c1 = coords[1], c2 = coords[2], c3 = coords[3]]
);

/// `cp.async.bulk.tensor.{dim}.global.shared::cta.tile.bulk_group`: a box of a tensor
/// map from `src` out to global memory, in this thread's current bulk group; the
/// coordinates are the operands `$c = $e`, innermost first (as `tensor_g2s`).
macro_rules! tensor_s2g {
    ($name:ident($($p:ident: $t:ty),*), $dim:literal, [$c0:ident = $e0:expr $(, $c:ident = $e:expr)*]) => {
        #[inline(always)]
        pub(crate) unsafe fn $name(src: *const u8, tensor_map: *const u8, $($p: $t,)*) {
            // SAFETY: upheld by the caller (`tma::` of the same name).
            unsafe {
                asm!(concat!("cp.async.bulk.tensor.", $dim,
                             ".global.shared::cta.tile.bulk_group [{m}, {{{",
                             stringify!($c0), "}" $(, ", {", stringify!($c), "}")*, "}}], [{s}];"),
                     m = in(reg64) tensor_map, $c0 = in(reg32) $e0, $($c = in(reg32) $e,)*
                     s = in(reg32) shared_addr(src), options(nostack, preserves_flags));
            }
        }
    };
}

tensor_s2g!(cp_async_bulk_tensor_2d_s2g(x: i32, y: i32), "2d", [x = x, y = y]);
tensor_s2g!(
    cp_async_bulk_tensor_4d_s2g(coords: [i32; 4]), "4d",
    [c0 = coords[0], c1 = coords[1], c2 = coords[2], c3 = coords[3]]
);

/// `prefetch.tensormap`: bring a tensor map (a generic address of global memory) into
/// the cache the TMA unit reads descriptors from.
#[inline(always)]
pub(crate) unsafe fn prefetch_tensormap(tensor_map: *const u8) {
    // SAFETY: upheld by the caller (`tma::prefetch_tensormap`).
    unsafe {
        asm!("prefetch.tensormap [{m}];", m = in(reg64) tensor_map,
             options(nostack, preserves_flags));
    }
}

#[inline(always)]
pub(crate) unsafe fn named_barrier_sync(id: u32, threads: u32) {
    // SAFETY: upheld by the caller (`barrier::named_barrier_sync`). Not `bar.sync`
    // (= `barrier.sync.aligned`, which needs every thread of a warp at the same
    // instruction): `asm!` is not convergent for LLVM, which may copy the barrier into
    // both arms of an `if` around it, and did (thread 0's arm and the others').
    unsafe {
        asm!("barrier.sync {i}, {n};", i = in(reg32) id, n = in(reg32) threads,
             options(nostack, preserves_flags));
    }
}

#[inline(always)]
pub(crate) unsafe fn named_barrier_arrive(id: u32, threads: u32) {
    // SAFETY: upheld by the caller (`barrier::named_barrier_arrive`); the unaligned form
    // for the reason `named_barrier_sync` gives.
    unsafe {
        asm!("barrier.arrive {i}, {n};", i = in(reg32) id, n = in(reg32) threads,
             options(nostack, preserves_flags));
    }
}
