//! The emulator's checks: the default mode, or strict mode (`oxide_abi::emu::CHECK_STRICT`),
//! which makes bugs visible that a GPU shows only sometimes. Python sets them for one
//! launch through [`__oxide_emu_configure`] just before calling the host entry, on
//! the same OS thread; the launch takes them when it starts.
//!
//! Strict mode:
//! - shared memory (statics and the dynamic region) holds `POISON_BYTE`s when each block
//!   starts, so a read of a slot that no thread wrote gives NaN or all ones, not the 0
//!   (or the previous block's value) that hides the bug;
//! - a block's threads run in an order shuffled by the seed between the points where
//!   they yield (barriers, warp operations), so a missing barrier (thread `t` reading
//!   the slot that thread `t - 1` writes) gives a wrong answer; a seed gives the same
//!   order every time, on any number of cores (each block has its own stream);
//! - a shuffle that reads a lane outside its mask, or a lane that has returned, traps
//!   (the default mode gives the caller's own value: a GPU gives an undefined one).

use core::cell::Cell;

use oxide_abi::emu::{CHECK_STRICT, CHECKS_KNOWN, STATUS_BAD_LAUNCH, STATUS_OK};

/// The checks of one launch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Checks {
    pub strict: bool,
    pub seed: u64,
}

std::thread_local! {
    static NEXT: Cell<Option<Checks>> = const { Cell::new(None) };
}

/// Set the checks of the next launch made on this OS thread.
pub(crate) fn set_next(checks: Checks) {
    NEXT.with(|n| n.set(Some(checks)));
}

/// The checks set for this launch (the default mode when none were), which later
/// launches no longer see.
pub(crate) fn take() -> Checks {
    NEXT.with(Cell::take).unwrap_or_default()
}

/// `int32_t __oxide_emu_configure(uint32_t checks, uint64_t seed)`: the checks of the
/// next launch on the calling OS thread (oxide-abi's `CONFIGURE_SYMBOL`).
#[unsafe(no_mangle)]
pub extern "C" fn __oxide_emu_configure(checks: u32, seed: u64) -> i32 {
    if checks & !CHECKS_KNOWN != 0 {
        return STATUS_BAD_LAUNCH;
    }
    set_next(Checks {
        strict: checks & CHECK_STRICT != 0,
        seed,
    });
    STATUS_OK
}

/// splitmix64: a small, well-mixed stream, seeded per block so that the order a block
/// runs in depends on the launch's seed and the block's index only.
pub(super) struct Rng(u64);

impl Rng {
    pub fn for_block(seed: u64, block: u64) -> Rng {
        let mut r = Rng(seed ^ block.wrapping_mul(0xD1B5_4A32_D192_ED03));
        r.next();
        r
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Fisher–Yates.
    pub fn shuffle(&mut self, v: &mut [u32]) {
        for i in (1..v.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_one_order_and_other_seeds_others() {
        let order = |seed, block| {
            let mut v: std::vec::Vec<u32> = (0..64).collect();
            Rng::for_block(seed, block).shuffle(&mut v);
            v
        };
        assert_eq!(order(7, 3), order(7, 3));
        assert_ne!(order(7, 3), order(8, 3));
        assert_ne!(order(7, 3), order(7, 4));
        let mut sorted = order(7, 3);
        sorted.sort_unstable();
        assert_eq!(sorted, (0..64).collect::<std::vec::Vec<u32>>());
    }

    #[test]
    fn unknown_check_bits_are_refused() {
        assert_eq!(__oxide_emu_configure(CHECK_STRICT, 5), STATUS_OK);
        assert_eq!(
            take(),
            Checks {
                strict: true,
                seed: 5
            }
        );
        assert_eq!(take(), Checks::default());
        assert_eq!(__oxide_emu_configure(1 << 31, 0), STATUS_BAD_LAUNCH);
        assert_eq!(take(), Checks::default());
    }
}
