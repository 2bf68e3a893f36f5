//! Shaped array parameters (`Array2<T>`, `DisjointArray2<T, Strided>`, …) and the shape
//! contract of `#[shapes(a[m, k], b[k, n], c[m, n])]`: what the manifest records about
//! each one, so the launcher checks extents before launch and a kernel reads its
//! dimensions from its arrays instead of from scalars the caller passes.
//!
//! ABI of a rank-`R` array: the pointer, then `R` extents, then `R` strides in elements
//! (all u64 words), outermost dimension first. Strides are never negative (the launcher
//! refuses such views).

/// Highest rank a shaped array parameter may have.
pub const MAX_ARRAY_RANK: usize = 3;

/// Largest extent of one dimension, and largest stride in elements: thread coordinates
/// (`blockIdx * blockDim + threadIdx`) are 32-bit on the GPU, and a grid covers one
/// dimension per axis, so an extent past `i32::MAX` could not be reached by a 2-D grid.
pub const MAX_ARRAY_EXTENT: u64 = i32::MAX as u64;

/// How an array's elements may lie in memory, fixed by the parameter's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum ArrayLayout {
    /// C-contiguous (row-major, no gaps): the default, and the fast path (rows are
    /// plain slices; the innermost stride is the constant 1).
    C,
    /// Any non-negative strides in elements (F-order, transposed and sliced views),
    /// read through the strides; an output's elements must still not overlap.
    Strided,
}

impl ArrayLayout {
    pub const fn name(self) -> &'static str {
        match self {
            ArrayLayout::C => "c",
            ArrayLayout::Strided => "strided",
        }
    }

    /// The marker type's name in `oxide_device` (`Array2<f32, Strided>`).
    pub const fn rust_name(self) -> &'static str {
        match self {
            ArrayLayout::C => "C",
            ArrayLayout::Strided => "Strided",
        }
    }
}

/// A shaped array parameter: its layout and one name per dimension (outermost first).
/// A name is an identifier shared with other parameters' dimensions (`k` in `a[m, k]`
/// and `b[k, n]`: the launcher requires equal extents), a decimal extent the array
/// must have (`3`), or `_` (any extent, named `param[axis]` in messages).
#[cfg(feature = "serde")]
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ArrayShape {
    pub layout: ArrayLayout,
    pub dims: Vec<String>,
}

#[cfg(feature = "serde")]
impl ArrayShape {
    pub fn rank(&self) -> usize {
        self.dims.len()
    }
}
