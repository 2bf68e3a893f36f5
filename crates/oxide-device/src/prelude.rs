//! `use oxide_device::prelude::*;` brings what nearly every kernel file needs.

pub use crate::disjoint::DisjointSlice;
pub use crate::thread;
pub use crate::thread::ThreadIndex;
pub use crate::{kernel, launch_bounds};
