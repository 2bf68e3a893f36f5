//! Scalar arguments the fast path takes besides Python's own `float`, `int` and `bool`:
//! NumPy scalars (`np.float32(1.7)`, `np.int64(3)`, `np.bool_(True)`) and 0-d NumPy
//! arrays, read by value. The table of NumPy scalar types comes from pyoxide/_launch/args.py
//! (`fast_scalar_types`), the one statement of what a scalar parameter accepts.

use std::ffi::{c_double, c_ulong};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyTuple, PyType};

/// What a NumPy scalar type holds (NumPy's dtype kind letters).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Float,
    Int,
    Bool,
}

pub struct Scalars {
    /// NumPy scalar type -> its class letter ('f', 'i', 'u', 'b').
    types: Py<PyDict>,
    /// `numpy.ndarray`: a 0-d one is read as its element.
    ndarray: Option<Py<PyType>>,
}

impl Scalars {
    pub fn new(types: Bound<'_, PyDict>, ndarray: Option<Bound<'_, PyType>>) -> Scalars {
        Scalars {
            types: types.unbind(),
            ndarray: ndarray.map(Bound::unbind),
        }
    }

    /// `a` as a NumPy scalar of a known class (a 0-d NumPy array as its element), or
    /// None when it is neither.
    pub fn numpy<'py>(&self, a: &Bound<'py, PyAny>) -> Option<(Class, Bound<'py, PyAny>)> {
        if let Some(found) = self.numpy_scalar(a) {
            return Some(found);
        }
        let py = a.py();
        let types = self.types.bind(py);
        let ty = a.get_type();
        let ndarray = self.ndarray.as_ref()?.bind(py);
        if !ty.is(ndarray) {
            return None;
        }
        let shape = a.getattr(pyo3::intern!(py, "shape")).ok()?;
        if !shape.cast::<PyTuple>().ok()?.is_empty() {
            return None;
        }
        let item = a.get_item(PyTuple::empty(py)).ok()?; // a 0-d array's element
        let class = types.get_item(item.get_type()).ok().flatten()?;
        Some((class_of(&class)?, item))
    }

    /// `a` as a NumPy scalar of a known class, or None (a 0-d array too).
    pub fn numpy_scalar<'py>(&self, a: &Bound<'py, PyAny>) -> Option<(Class, Bound<'py, PyAny>)> {
        let types = self.types.bind(a.py());
        let class = types.get_item(a.get_type()).ok().flatten()?;
        Some((class_of(&class)?, a.clone()))
    }
}

fn class_of(letter: &Bound<'_, PyAny>) -> Option<Class> {
    match letter.extract::<char>().ok()? {
        'f' => Some(Class::Float),
        'i' | 'u' => Some(Class::Int),
        'b' => Some(Class::Bool),
        _ => None,
    }
}

/// `float(a)` for a NumPy float scalar, without raising (None on failure).
pub fn as_f64(a: &Bound<'_, PyAny>) -> Option<f64> {
    // SAFETY: `a` is a live object and the GIL is held; a failure is cleared (a decline).
    unsafe {
        let v: c_double = ffi::PyFloat_AsDouble(a.as_ptr());
        if v == -1.0 && !ffi::PyErr_Occurred().is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        Some(v)
    }
}

/// `operator.index(a)` for a NumPy integer scalar, as a Python int.
pub fn as_int<'py>(a: &Bound<'py, PyAny>) -> Option<Bound<'py, PyAny>> {
    // SAFETY: `a` is live and the GIL is held; the result is a new reference or null
    // with an exception set, which is cleared (a decline).
    unsafe {
        let i = ffi::PyNumber_Index(a.as_ptr());
        if i.is_null() {
            ffi::PyErr_Clear();
            return None;
        }
        Some(Bound::from_owned_ptr(a.py(), i))
    }
}

/// An int's value as a u64 (None: not an int, or out of range), as `extract::<u64>`.
pub fn u64_of(a: &Bound<'_, PyAny>) -> Option<u64> {
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
