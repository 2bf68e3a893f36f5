//! A kernel's parameters: where each one sits in the PTX parameter buffer, which Python
//! values the fast path accepts for it, and how they are packed.
//!
//! The rules are a subset of pyoxide/_args.py (the one statement of them), which the
//! general path applies: anything not certainly fine is declined (the caller returns
//! False), never refused. tests/test_fast_path.py holds both to the same table.

use std::ffi::c_ulong;

use oxide_abi::ScalarType;

use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString, PyTuple, PyType};

const F32_MAX: f64 = 3.402_823_466_385_288_6e38;

pub enum Kind {
    /// A slice: packed as (u64 pointer, u64 length). `length` is its contract
    /// (`#[shapes(x[n])]`), coded as a shaped array's dims are.
    Array {
        dtype: Py<PyAny>,
        itemsize: u64,
        mutable: bool,
        length: i64,
    },
    /// A shaped array (`Array2<T>` …): packed as pointer, extents, strides in elements.
    /// The fast path takes C-contiguous CuPy arrays only (any layout accepts them);
    /// `dims` per axis: -1 any extent, `>= 0` that extent, `-2 - id` the shared name `id`.
    Shaped {
        dtype: Py<PyAny>,
        itemsize: u64,
        mutable: bool,
        dims: Vec<i64>,
    },
    F32,
    F64,
    Bool,
    Signed {
        bytes: usize,
        lo: i64,
        hi: i64,
    },
    Unsigned {
        bytes: usize,
        hi: u64,
    },
}

pub struct Param {
    pub kind: Kind,
    pub offset: usize,
}

/// The attribute names the checks read, interned once.
pub struct Names {
    dtype: Py<PyString>,
    ndim: Py<PyString>,
    c_contiguous: Py<PyString>,
    data: Py<PyString>,
    device_id: Py<PyString>,
    ptr: Py<PyString>,
    size: Py<PyString>,
    shape: Py<PyString>,
}

impl Names {
    pub fn new(py: Python<'_>) -> Names {
        let n = |s: &str| PyString::intern(py, s).unbind();
        Names {
            dtype: n("dtype"),
            ndim: n("ndim"),
            c_contiguous: n("_c_contiguous"),
            data: n("data"),
            device_id: n("device_id"),
            ptr: n("ptr"),
            size: n("size"),
            shape: n("shape"),
        }
    }
}

pub struct Layout {
    pub params: Vec<Param>,
    /// Bytes in the parameter buffer.
    pub size: usize,
    /// Pairs of array parameters that may not overlap (one of them is mutable).
    pub exclusive: Vec<(usize, usize)>,
}

impl Layout {
    /// From `(type, dtype, itemsize, mutable, dims, length)` per parameter; dtype is None
    /// for scalars, dims (see [`Kind::Shaped`]) None for anything but shaped arrays,
    /// length a slice's contract coded as a dimension (-1: any).
    pub fn new(description: &Bound<'_, PyAny>) -> PyResult<Layout> {
        let mut params = Vec::new();
        let mut offset = 0usize;
        let mut place = |size: usize| {
            offset = offset.next_multiple_of(size);
            let at = offset;
            offset += size;
            at
        };
        for item in description.try_iter()? {
            let item = item?;
            let (ty, dtype, itemsize, mutable, dims, length): ParamItem<'_> = item.extract()?;
            let named = |d: i64| d >= -1 - MAX_NAMES as i64;
            let kind = if dtype.is_none() {
                scalar_kind(&ty)?
            } else if let Some(dims) = dims {
                if dims.is_empty() || dims.len() > MAX_RANK || !dims.iter().all(|&d| named(d)) {
                    return Err(PyValueError::new_err(
                        "unsupported shaped array description",
                    ));
                }
                Kind::Shaped {
                    dtype: dtype.unbind(),
                    itemsize,
                    mutable,
                    dims,
                }
            } else if !named(length) {
                return Err(PyValueError::new_err(
                    "unsupported slice length description",
                ));
            } else {
                Kind::Array {
                    dtype: dtype.unbind(),
                    itemsize,
                    mutable,
                    length,
                }
            };
            let offset = match kind {
                Kind::Array { .. } => {
                    let at = place(8);
                    place(8);
                    at
                }
                Kind::Shaped { ref dims, .. } => {
                    let at = place(8);
                    for _ in 0..2 * dims.len() {
                        place(8);
                    }
                    at
                }
                Kind::F32 => place(4),
                Kind::F64 => place(8),
                Kind::Bool => place(1),
                Kind::Signed { bytes, .. } | Kind::Unsigned { bytes, .. } => place(bytes),
            };
            params.push(Param { kind, offset });
        }
        let mut exclusive = Vec::new();
        for (i, p) in params.iter().enumerate() {
            for (j, q) in params.iter().enumerate().skip(i + 1) {
                if let (Some((_, m)), Some((_, n))) = (p.kind.memory(), q.kind.memory())
                    && (m || n)
                {
                    exclusive.push((i, j));
                }
            }
        }
        Ok(Layout {
            params,
            size: offset,
            exclusive,
        })
    }

    /// Check `args` and pack them into `buf` (zeroed, `self.size` bytes); false to decline.
    pub fn pack(
        &self,
        names: &Names,
        ndarray: &Bound<'_, PyType>,
        device: i64,
        args: &Bound<'_, PyTuple>,
        buf: &mut [u8],
    ) -> bool {
        if args.len() != self.params.len() {
            return false;
        }
        // Extents bound to the shared dimension names so far (a shape contract).
        let mut named = [u64::MAX; MAX_NAMES];
        for (p, a) in self.params.iter().zip(args.iter_borrowed()) {
            let ok = match &p.kind {
                Kind::Shaped {
                    dtype,
                    itemsize,
                    dims,
                    ..
                } => shaped(
                    names, ndarray, dtype, *itemsize, device, &a, dims, &mut named,
                )
                .map(|(ptr, shape)| {
                    let rank = dims.len();
                    put(buf, p.offset, &ptr.to_ne_bytes());
                    let mut stride = 1u64;
                    for d in (0..rank).rev() {
                        let n = shape[d];
                        // As the general path: an extent of 0 or 1 passes stride 0.
                        let s = if n > 1 { stride } else { 0 };
                        put(buf, p.offset + 8 * (1 + d), &n.to_ne_bytes());
                        put(buf, p.offset + 8 * (1 + rank + d), &s.to_ne_bytes());
                        stride *= n;
                    }
                })
                .is_some(),
                Kind::Array {
                    dtype,
                    itemsize,
                    length,
                    ..
                } => match array(names, ndarray, dtype, *itemsize, device, &a) {
                    Some((ptr, len)) if bind(&mut named, *length, len) => {
                        put(buf, p.offset, &ptr.to_ne_bytes());
                        put(buf, p.offset + 8, &len.to_ne_bytes());
                        true
                    }
                    _ => false,
                },
                Kind::F32 => float(&a)
                    .filter(|f| (-F32_MAX..=F32_MAX).contains(f))
                    .map(|f| put(buf, p.offset, &(f as f32).to_ne_bytes()))
                    .is_some(),
                Kind::F64 => float(&a)
                    .filter(|f| !f.is_nan())
                    .map(|f| put(buf, p.offset, &f.to_ne_bytes()))
                    .is_some(),
                Kind::Bool => {
                    if a.is_exact_instance_of::<PyBool>() {
                        buf[p.offset] = u8::from(a.is(&*PyBool::new(a.py(), true)));
                        true
                    } else {
                        false
                    }
                }
                Kind::Signed { bytes, lo, hi } => {
                    match exact_int(&a).and_then(|i| i.extract::<i64>().ok()) {
                        Some(v) if (*lo..=*hi).contains(&v) => {
                            put_int(buf, p.offset, *bytes, v as u64);
                            true
                        }
                        _ => false,
                    }
                }
                Kind::Unsigned { bytes, hi } => match exact_int(&a).and_then(u64_of) {
                    Some(v) if v <= *hi => {
                        put_int(buf, p.offset, *bytes, v);
                        true
                    }
                    _ => false,
                },
            };
            if !ok {
                return false;
            }
        }
        // A mutable slice may not overlap another slice (Rust's exclusivity); the general
        // path explains any overlap.
        for &(i, j) in &self.exclusive {
            let (x, y) = (&self.params[i], &self.params[j]);
            let (px, nx) = (word(buf, x.offset), self.elements(buf, i));
            let (py_, ny) = (word(buf, y.offset), self.elements(buf, j));
            let (Some((sx, _)), Some((sy, _))) = (x.kind.memory(), y.kind.memory()) else {
                continue;
            };
            let (sx, sy) = (&sx, &sy);
            let overlap = nx != 0
                && ny != 0
                && u128::from(px) < u128::from(py_) + u128::from(ny) * u128::from(*sy)
                && u128::from(py_) < u128::from(px) + u128::from(nx) * u128::from(*sx);
            if overlap {
                return false;
            }
        }
        true
    }

    /// The element count packed for parameter `i` (an array).
    pub fn length_of(&self, buf: &[u8], i: usize) -> u64 {
        word(buf, self.params[i].offset + 8)
    }

    /// The extents packed for shaped parameter `i` (empty for other kinds).
    pub fn shape_of(&self, buf: &[u8], i: usize) -> Vec<u64> {
        let p = &self.params[i];
        match &p.kind {
            Kind::Shaped { dims, .. } => (0..dims.len())
                .map(|d| word(buf, p.offset + 8 * (1 + d)))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Elements of array parameter `i` as packed (a shaped array's are C-contiguous).
    fn elements(&self, buf: &[u8], i: usize) -> u64 {
        let p = &self.params[i];
        match &p.kind {
            Kind::Shaped { dims, .. } => (0..dims.len())
                .map(|d| word(buf, p.offset + 8 * (1 + d)))
                .product(),
            _ => word(buf, p.offset + 8),
        }
    }
}

impl Kind {
    /// (itemsize, mutable) of a parameter that refers to memory.
    fn memory(&self) -> Option<(u64, bool)> {
        match self {
            Kind::Array {
                itemsize, mutable, ..
            }
            | Kind::Shaped {
                itemsize, mutable, ..
            } => Some((*itemsize, *mutable)),
            _ => None,
        }
    }
}

/// One parameter's description from Python (see [`Layout::new`]).
type ParamItem<'py> = (String, Bound<'py, PyAny>, u64, bool, Option<Vec<i64>>, i64);

/// Highest rank (oxide-abi's `MAX_ARRAY_RANK`) and most shared dimension names the fast
/// path handles (a kernel with more takes the general path).
const MAX_RANK: usize = oxide_abi::shape::MAX_ARRAY_RANK;
pub const MAX_NAMES: usize = 8;

/// (pointer, extents) of a C-contiguous `cupy.ndarray` of `dtype` on `device` whose rank
/// and extents fit `dims` (and the extents already bound in `named`, which it extends).
#[allow(clippy::too_many_arguments)]
fn shaped(
    names: &Names,
    ndarray: &Bound<'_, PyType>,
    dtype: &Py<PyAny>,
    itemsize: u64,
    device: i64,
    a: &Bound<'_, PyAny>,
    dims: &[i64],
    named: &mut [u64; MAX_NAMES],
) -> Option<(u64, [u64; MAX_RANK])> {
    let py = a.py();
    if !a.is_exact_instance(ndarray) || !a.getattr(names.dtype.bind(py)).ok()?.is(dtype) {
        return None;
    }
    let shape_obj = a.getattr(names.shape.bind(py)).ok()?;
    let shape_tuple = shape_obj.cast_exact::<PyTuple>().ok()?;
    if shape_tuple.len() != dims.len()
        || !a
            .getattr(names.c_contiguous.bind(py))
            .ok()?
            .is_truthy()
            .ok()?
    {
        return None;
    }
    let mut shape = [0u64; MAX_RANK];
    let mut elements = 1u64;
    for (d, n) in shape_tuple.iter_borrowed().enumerate() {
        let n = u64_of(&n)?;
        if n > oxide_abi::shape::MAX_ARRAY_EXTENT {
            return None;
        }
        if !bind(named, dims[d], n) {
            return None;
        }
        shape[d] = n;
        elements = elements.checked_mul(n)?;
    }
    Some((device_span(names, a, itemsize, device, elements)?, shape))
}

/// Whether extent `n` fits the contract's dimension `d` (-1 any, `>= 0` that extent,
/// `-2 - id` the shared name `id`, bound in `named` by its first extent).
fn bind(named: &mut [u64; MAX_NAMES], d: i64, n: u64) -> bool {
    match d {
        -1 => true,
        fixed if fixed >= 0 => n == fixed as u64,
        name => {
            let slot = &mut named[(-2 - name) as usize];
            if *slot == u64::MAX {
                *slot = n;
            }
            *slot == n
        }
    }
}

/// The launch ABI's pointer for a CuPy array's `elements` elements of `itemsize` bytes
/// (its device pointer; for an empty array `itemsize`, never null: oxide-abi's
/// `empty_array_address`), when the array lives on `device`, its pointer is aligned to `itemsize`
/// and its bytes end below 2**63 (else None: the general path explains).
fn device_span(
    names: &Names,
    a: &Bound<'_, PyAny>,
    itemsize: u64,
    device: i64,
    elements: u64,
) -> Option<u64> {
    let py = a.py();
    let data = a.getattr(names.data.bind(py)).ok()?;
    if data
        .getattr(names.device_id.bind(py))
        .ok()?
        .extract::<i64>()
        .ok()?
        != device
    {
        return None;
    }
    let ptr = u64_of(&data.getattr(names.ptr.bind(py)).ok()?)?;
    if itemsize == 0 || !ptr.is_multiple_of(itemsize) {
        return None;
    }
    let bytes = elements.checked_mul(itemsize)?;
    if bytes > (1 << 63) - 1 {
        return None;
    }
    ptr.checked_add(bytes)?;
    Some(if elements == 0 {
        oxide_abi::types::empty_array_address(itemsize)
    } else {
        ptr
    })
}

/// A scalar parameter's kind, from oxide-abi's table (size, class, range).
fn scalar_kind(ty: &str) -> PyResult<Kind> {
    let Some(t) = ScalarType::from_rust_name(ty) else {
        return Err(PyValueError::new_err(format!("unknown scalar type {ty:?}")));
    };
    if matches!(t, ScalarType::F16 | ScalarType::Bf16) {
        // Rounding a Python float to a half is the general path's (pyoxide/_half.py).
        return Err(PyValueError::new_err(format!(
            "{ty} scalars take the general path"
        )));
    }
    let bytes = t.size();
    Ok(match (t, t.int_range()) {
        (ScalarType::F32, _) => Kind::F32,
        (ScalarType::F64, _) => Kind::F64,
        (ScalarType::Bool, _) => Kind::Bool,
        (_, Some((lo, hi))) if lo < 0 => Kind::Signed {
            bytes,
            lo: lo as i64,
            hi: hi as i64,
        },
        (_, Some((_, hi))) => Kind::Unsigned {
            bytes,
            hi: hi as u64,
        },
        (_, None) => unreachable!("every non-float, non-bool scalar type has a range"),
    })
}

/// (pointer, length) of a plain 1-D C-contiguous `cupy.ndarray` of `dtype` on `device`,
/// aligned to its `itemsize` and ending below 2**64 (anything else is the general path's
/// to explain).
fn array(
    names: &Names,
    ndarray: &Bound<'_, PyType>,
    dtype: &Py<PyAny>,
    itemsize: u64,
    device: i64,
    a: &Bound<'_, PyAny>,
) -> Option<(u64, u64)> {
    let py = a.py();
    if !a.is_exact_instance(ndarray) {
        return None;
    }
    if !a.getattr(names.dtype.bind(py)).ok()?.is(dtype) {
        return None;
    }
    if a.getattr(names.ndim.bind(py)).ok()?.extract::<i64>().ok()? != 1 {
        return None;
    }
    if !a
        .getattr(names.c_contiguous.bind(py))
        .ok()?
        .is_truthy()
        .ok()?
    {
        return None;
    }
    let len = u64_of(&a.getattr(names.size.bind(py)).ok()?)?;
    Some((device_span(names, a, itemsize, device, len)?, len))
}

/// An int's value as a u64 (None: not an int, or out of range), as `extract::<u64>`.
fn u64_of(a: &Bound<'_, PyAny>) -> Option<u64> {
    if size_of::<c_ulong>() == 8 && a.is_exact_instance_of::<PyInt>() {
        // PyLong_AsUnsignedLongLong converts any int above 2**30 (every device pointer)
        // through _PyLong_AsByteArray; PyLong_AsUnsignedLong, as wide here, walks the
        // digits, several times faster.
        // SAFETY: `a` is a live int and the GIL is held.
        let v = unsafe { ffi::PyLong_AsUnsignedLong(a.as_ptr()) };
        // SAFETY: the GIL is held.
        if v == c_ulong::MAX && unsafe { !ffi::PyErr_Occurred().is_null() } {
            // SAFETY: the GIL is held; the error (negative or too large) is a decline.
            unsafe { ffi::PyErr_Clear() };
            return None;
        }
        #[allow(clippy::useless_conversion)] // c_ulong is u32 where it is not u64
        return Some(u64::from(v));
    }
    a.extract::<u64>().ok()
}

/// An exact `float`'s value.
fn float(a: &Bound<'_, PyAny>) -> Option<f64> {
    a.cast_exact::<PyFloat>().ok().map(|f| f.value())
}

/// `a` when it is exactly an `int` (not a bool, not a NumPy integer).
fn exact_int<'a, 'py>(a: &'a Bound<'py, PyAny>) -> Option<&'a Bound<'py, PyAny>> {
    a.is_exact_instance_of::<PyInt>().then_some(a)
}

fn put(buf: &mut [u8], offset: usize, bytes: &[u8]) {
    buf[offset..offset + bytes.len()].copy_from_slice(bytes);
}

fn put_int(buf: &mut [u8], offset: usize, bytes: usize, v: u64) {
    match bytes {
        1 => put(buf, offset, &(v as u8).to_ne_bytes()),
        2 => put(buf, offset, &(v as u16).to_ne_bytes()),
        4 => put(buf, offset, &(v as u32).to_ne_bytes()),
        _ => put(buf, offset, &v.to_ne_bytes()),
    }
}

fn word(buf: &[u8], offset: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&buf[offset..offset + 8]);
    u64::from_ne_bytes(w)
}
