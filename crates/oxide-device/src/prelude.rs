//! `use oxide_device::prelude::*;` brings what nearly every kernel file needs: the
//! attributes, the parameter types, the modules by name (`thread::index_1d()`,
//! `warp::reduce_sum_f32(x)`), the float methods (`x.exp()`) and the macros.

pub use crate::array::{
    Array, Array1, Array2, Array3, DisjointArray, DisjointArray1, DisjointArray2, DisjointArray3,
    Strided, index_nd,
};
pub use crate::atomic::{AtomicSlice, Ordering};
pub use crate::disjoint::DisjointSlice;
pub use crate::half::{bf16, f16};
pub use crate::math::GpuFloat;
pub use crate::row::RowShare;
pub use crate::shared::{DynamicSharedArray, SharedArray};
pub use crate::thread::ThreadIndex;
pub use crate::vector::{SliceVectors, Vector};
pub use crate::{atomic, block, combine, row, shared, thread, vector, warp};
pub use crate::{
    cluster_launch, dependent_launch, device, gpu_assert, gpu_printf, gpu_printf_c, kernel, launch,
    launch_bounds, shapes, shared_array, tensor_maps, tune, unrolled, variant_of,
};
