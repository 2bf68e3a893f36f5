//! The current CUDA stream, read on every launch as CuPy's own launches read it.
//!
//! CuPy's Cython module `cupy.cuda.stream` (and `cupy_backends.cuda.stream`) exports the
//! C function `intptr_t get_current_stream_ptr()` through `__pyx_capi__`, a dict of
//! capsules named by the C signature; CuPy's `Function.__call__` calls it for a launch on
//! the current stream. Called directly it skips `cupy.cuda.get_current_stream()` (a Python
//! call) and the `.ptr` read of the Stream object it returns. Where CuPy exports no such
//! capsule (a CuPy without it, a fake in tests) the Python call is the fallback.

use std::ffi::{CStr, c_void};
use std::sync::atomic::{AtomicI64, Ordering};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyString};

/// The capsule name Cython gives a cdef function `intptr_t f()`. Cython leaves the
/// exception clause out of it: `except? -1`, `except *` and `noexcept` all read alike.
pub const SIGNATURE: &CStr = c"intptr_t (void)";

type StreamFn = unsafe extern "C" fn() -> isize;

pub enum CurrentStream {
    /// CuPy's C-level `get_current_stream_ptr`, called with the GIL held (it reads a
    /// Python thread-local).
    Function {
        get: StreamFn,
        /// Held with the pointer taken from it (the exporting extension module, like any,
        /// is never unloaded).
        _capsule: Py<PyCapsule>,
    },
    /// `get().ptr`: `cupy.cuda.get_current_stream().ptr`.
    Python { get: Py<PyAny>, ptr: Py<PyString> },
}

impl CurrentStream {
    /// From `capsule` when given (its name must be [`SIGNATURE`]) and it agrees with
    /// `get().ptr` now; else the Python call. The check guards against a CuPy whose C
    /// function means something else than its Python one: a wrong stream would be a
    /// silent race, a Python call only slower.
    pub fn new(
        get: Bound<'_, PyAny>,
        capsule: Option<Bound<'_, PyCapsule>>,
    ) -> PyResult<CurrentStream> {
        let py = get.py();
        let python = CurrentStream::Python {
            get: get.unbind(),
            ptr: PyString::intern(py, "ptr").unbind(),
        };
        let Some(capsule) = capsule else {
            return Ok(python);
        };
        let pointer = capsule.pointer_checked(Some(SIGNATURE)).map_err(|_| {
            PyValueError::new_err(format!(
                "current_stream_capsule must be a capsule named {SIGNATURE:?} \
                 (a Cython `intptr_t f()`)"
            ))
        })?;
        // SAFETY: the capsule's name vouches for the signature `intptr_t (void)`;
        // Cython's cdef functions use the C calling convention.
        let get = unsafe { std::mem::transmute::<*mut c_void, StreamFn>(pointer.as_ptr()) };
        let function = CurrentStream::Function {
            get,
            _capsule: capsule.unbind(),
        };
        let expected = python.get(py)?;
        match function.get(py) {
            Ok(ptr) if ptr == expected => Ok(function),
            _ => Ok(python),
        }
    }

    /// The current stream's handle (0: the legacy default stream).
    pub fn get(&self, py: Python<'_>) -> PyResult<u64> {
        match self {
            CurrentStream::Function { get, .. } => {
                // SAFETY: the GIL is held, as the Cython function expects.
                let ptr = unsafe { get() };
                // The signature does not say whether the function can raise (see
                // SIGNATURE), so look for a raised exception after every call: one read of
                // the thread state, right for all three exception clauses.
                // SAFETY: the GIL is held.
                if unsafe { !ffi::PyErr_Occurred().is_null() } {
                    return Err(PyErr::fetch(py));
                }
                Ok(ptr as usize as u64)
            }
            CurrentStream::Python { get, ptr } => get
                .bind(py)
                .call0()?
                .getattr(ptr.bind(py))?
                .extract::<u64>(),
        }
    }

    /// Whether the launcher calls CuPy's C function (true) or the Python one.
    pub fn is_function(&self) -> bool {
        matches!(self, CurrentStream::Function { .. })
    }
}

/// What [`test_current_stream`] returns; `i64::MIN`: it raises RuntimeError instead.
pub static TEST_STREAM: AtomicI64 = AtomicI64::new(0);

/// A stand-in for CuPy's function, for the benchmark and tests: returns [`TEST_STREAM`]
/// or raises, as a Cython `except? -1` function does (an exception set, -1 returned).
pub extern "C" fn test_current_stream() -> isize {
    let value = TEST_STREAM.load(Ordering::Relaxed);
    if value != i64::MIN {
        return value as isize;
    }
    Python::attach(|py| {
        PyRuntimeError::new_err("get_current_stream_ptr failed (test double)").restore(py)
    });
    -1
}
