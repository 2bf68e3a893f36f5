//! Where a warp's lanes meet for a warp operation, as PTX's `*.sync` instructions meet:
//! each lane deposits its value with the operation's mask and waits; the lanes of a
//! mask go on together once every lane of it that still runs waits with that same
//! mask. Lanes that returned, and those a block's partial last warp does not have, are
//! not waited for ("all non-exited threads in membermask"), so two halves of a warp
//! meet apart (`if lane < 16 { shuffle_xor(0xffff, …) }` while the others go on to a
//! barrier), and a mask's lanes that wait elsewhere (at a barrier, or with another
//! mask) are a deadlock on a GPU, which the block reports.

use crate::arch::WARP_SIZE;

const LANES: usize = WARP_SIZE as usize;

/// The lanes' values of one warp operation, as one lane sees it.
#[derive(Clone, Copy)]
pub(crate) struct Exchange {
    pub values: [u64; LANES],
    /// The lanes that met in it (bit per lane); `values` holds theirs.
    pub arrived: u32,
}

/// One warp's deposits and the results of its last meetings.
pub(super) struct WarpSlots {
    deposit: [u64; LANES],
    mask: [u32; LANES],
    /// Each lane's value as of the meeting it last took part in.
    values: [u64; LANES],
    /// Each lane's group in that meeting. Groups that meet at once are disjoint, and a
    /// lane that met is resumed (and reads this) before any later meeting completes,
    /// so one array serves every group.
    group: [u32; LANES],
}

impl WarpSlots {
    pub fn new() -> WarpSlots {
        WarpSlots {
            deposit: [0; LANES],
            mask: [0; LANES],
            values: [0; LANES],
            group: [0; LANES],
        }
    }

    pub fn deposit(&mut self, lane: usize, value: u64, mask: u32) {
        self.deposit[lane] = value;
        self.mask[lane] = mask;
    }

    /// What `lane` sees of the meeting it was released from.
    pub fn result(&self, lane: usize) -> Exchange {
        Exchange {
            values: self.values,
            arrived: self.group[lane],
        }
    }

    /// Meet every group of the `waiting` lanes (bits) whose mask's `live` lanes all
    /// wait with that mask; returns the lanes released.
    pub fn complete(&mut self, waiting: u32, live: u32) -> u32 {
        let mut unseen = waiting;
        let mut released = 0;
        while unseen != 0 {
            let mask = self.mask[unseen.trailing_zeros() as usize];
            let group = self.with_mask(unseen, mask);
            unseen &= !group;
            if group == mask & live {
                for lane in lanes(group) {
                    self.values[lane] = self.deposit[lane];
                    self.group[lane] = group;
                }
                released |= group;
            }
        }
        released
    }

    /// For a warp whose `waiting` lanes cannot meet: one of them, its mask, and a lane
    /// of that mask that keeps it waiting (which waits with another mask when it is in
    /// `waiting`, else somewhere that is not a warp operation).
    pub fn blocked(&self, waiting: u32, live: u32) -> Option<(u32, u32, u32)> {
        lanes(waiting).find_map(|lane| {
            let mask = self.mask[lane];
            let missing = mask & live & !self.with_mask(waiting, mask);
            (missing != 0).then(|| (lane as u32, mask, missing.trailing_zeros()))
        })
    }

    /// The mask `lane` waits with.
    pub fn mask_of(&self, lane: u32) -> u32 {
        self.mask[lane as usize]
    }

    fn with_mask(&self, lanes_: u32, mask: u32) -> u32 {
        lanes(lanes_)
            .filter(|&l| self.mask[l] == mask)
            .fold(0, |g, l| g | 1 << l)
    }
}

/// The set bits of `bits`, lowest first.
fn lanes(mut bits: u32) -> impl Iterator<Item = usize> {
    core::iter::from_fn(move || {
        (bits != 0).then(|| {
            let l = bits.trailing_zeros();
            bits &= bits - 1;
            l as usize
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(masks: &[(u32, u32)]) -> WarpSlots {
        let mut s = WarpSlots::new();
        for &(lane, mask) in masks {
            s.deposit(lane as usize, u64::from(lane) * 10, mask);
        }
        s
    }

    #[test]
    fn half_warps_meet_apart() {
        let low: std::vec::Vec<(u32, u32)> = (0..16).map(|l| (l, 0xffff)).collect();
        let mut s = slots(&low);
        // Lanes 16..32 run on (at a barrier): the low half meets without them.
        assert_eq!(s.complete(0xffff, u32::MAX), 0xffff);
        let x = s.result(3);
        assert_eq!((x.arrived, x.values[7]), (0xffff, 70));
    }

    #[test]
    fn a_mask_waits_for_its_running_lanes_only() {
        let all: std::vec::Vec<(u32, u32)> = (0..8).map(|l| (l, u32::MAX)).collect();
        let mut s = slots(&all);
        // A partial warp of 8 lanes: the full mask's other lanes do not exist.
        assert_eq!(s.complete(0xff, 0xff), 0xff);
        // Lane 5 still runs: nobody goes on, and lane 0 is blocked by it.
        let mut s = slots(&all);
        let waiting = 0xff & !(1 << 5);
        assert_eq!(s.complete(waiting, 0xff), 0);
        assert_eq!(s.blocked(waiting, 0xff), Some((0, u32::MAX, 5)));
    }

    #[test]
    fn lanes_with_other_masks_are_a_deadlock() {
        let mut s = slots(&[(0, 0b11), (1, 0b10)]);
        assert_eq!(s.complete(0b11, 0b11), 0b10); // lane 1's mask is itself: it goes on
        let s = slots(&[(0, 0b11), (1, 0b111)]);
        assert_eq!(s.blocked(0b11, 0b111), Some((0, 0b11, 1)));
    }
}
