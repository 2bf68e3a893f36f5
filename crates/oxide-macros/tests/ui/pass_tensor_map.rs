//! `map: TmaDescriptor` by value is the parameter kind `tensor_map` (a `u8` payload, no
//! record: its size and alignment are oxide-abi's), by any path to the type; a pointer
//! to a map in device memory stays a `pointer` (cuda-oxide's form).
#![no_std]
extern crate std;

use oxide_abi::ParamKind;
use oxide_abi::descriptor::KernelDescriptor;
use oxide_device::prelude::*;
use oxide_device::tma::TmaDescriptor;

#[kernel]
pub fn by_value(map: TmaDescriptor, b: oxide_device::tma::TmaDescriptor, out: DisjointSlice<u8>) {
    let _ = (map.as_bytes(), b.as_bytes(), out.len());
}

#[kernel]
pub unsafe fn in_memory(_map: *const TmaDescriptor) {}

fn main() {
    let d = KernelDescriptor::decode(&__oxide_descriptor_by_value).unwrap();
    assert_eq!(d.params[0].kind, ParamKind::TensorMap);
    assert_eq!(d.params[1].kind, ParamKind::TensorMap);
    assert!(d.params[0].record.is_none() && !d.params[0].mutable);
    let p = KernelDescriptor::decode(&__oxide_descriptor_in_memory).unwrap();
    assert_eq!(p.params[0].kind, ParamKind::Pointer);
}
