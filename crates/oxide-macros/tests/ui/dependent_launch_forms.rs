use oxide_device::prelude::*;

#[kernel]
#[dependent_launch(yes)]
pub fn with_arguments(_x: &[f32]) {}

#[kernel]
#[dependent_launch]
#[dependent_launch]
pub fn twice(_x: &[f32]) {}

fn main() {}
