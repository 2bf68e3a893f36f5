//! `#[dependent_launch]`: below or above `#[kernel]`, recorded in the descriptor (every
//! instance of a generic kernel); absent, the descriptor says false.
#![no_std]
extern crate std;

use oxide_abi::descriptor::KernelDescriptor;
use oxide_device::prelude::*;

#[kernel]
#[dependent_launch]
pub fn below(x: &[f32]) {
    oxide_device::grid::griddepcontrol_wait();
    oxide_device::grid::griddepcontrol_launch_dependents();
    let _ = x.len();
}

#[dependent_launch]
#[kernel]
pub fn above(_x: &[f32]) {
    oxide_device::grid::griddepcontrol_wait();
}

#[kernel(1, 2)]
#[dependent_launch]
pub fn generic<const N: usize>(_x: &[f32]) {
    oxide_device::grid::griddepcontrol_wait();
}

#[kernel]
pub fn ordinary(_x: &[f32]) {}

fn main() {
    let dependent = |bytes: &[u8]| KernelDescriptor::decode(bytes).unwrap().dependent_launch;
    assert!(dependent(&__oxide_descriptor_below));
    assert!(dependent(&__oxide_descriptor_above));
    assert!(dependent(&__oxide_descriptor_generic_1));
    assert!(dependent(&__oxide_descriptor_generic_2));
    assert!(!dependent(&__oxide_descriptor_ordinary));
    // On the emulator (a plain call: the prerequisite grid, if any, is done) both return.
    below(&[1.0]);
}
