//! [`KernelBase`]: the call of a kernel object, in compiled code.
//!
//! `kernel(*args)` with a Python `Kernel.__call__` costs a Python frame (an args tuple, an
//! empty kwargs dict, an attribute read) before the launcher is even called. pyoxide's
//! `Kernel` gets this class as a base when the module loads (pyoxide/_launch.py,
//! `kernel_class`), so the interpreter calls [`KernelBase::__call__`] straight from the
//! call site: it runs the installed fast launcher and, only when that declines (or there
//! is none yet, or keywords were passed), calls the Python general path
//! `self._call_general(args, kwargs)`. Semantics are those of the Python `Kernel.__call__`.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use pyo3::{PyTraverseError, PyVisit};

use crate::Launcher;

/// The fast launcher a kernel holds (`kernel._fast`).
enum Fast {
    None,
    /// The native launcher, called without going through Python.
    Native(Py<Launcher>),
    /// Any other `fast(args, cfg) -> bool` (the generated Python fast path).
    Python(Py<PyAny>),
}

impl Fast {
    fn clone_ref(&self, py: Python<'_>) -> Fast {
        match self {
            Fast::None => Fast::None,
            Fast::Native(l) => Fast::Native(l.clone_ref(py)),
            Fast::Python(f) => Fast::Python(f.clone_ref(py)),
        }
    }
}

#[pyclass(frozen, subclass, module = "pyoxide._native")]
pub struct KernelBase {
    /// Behind a lock because the class is frozen (shared between threads); held only to
    /// copy or swap the reference, never across a call into Python or the driver.
    fast: Mutex<Fast>,
}

impl KernelBase {
    fn fast(&self, py: Python<'_>) -> Fast {
        self.fast
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone_ref(py)
    }
}

#[pymethods]
impl KernelBase {
    /// Takes (and ignores) the subclass's constructor arguments: `__init__` sets it up.
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> KernelBase {
        KernelBase {
            fast: Mutex::new(Fast::None),
        }
    }

    /// The fast launcher: None, a `pyoxide._native.Launcher`, or any
    /// `fast(args, cfg) -> bool` callable.
    #[getter(_fast)]
    fn get_fast(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        match self.fast(py) {
            Fast::None => None,
            Fast::Native(l) => Some(l.into_any()),
            Fast::Python(f) => Some(f),
        }
    }

    #[setter(_fast)]
    fn set_fast(&self, value: Bound<'_, PyAny>) {
        let fast = if value.is_none() {
            Fast::None
        } else if let Ok(launcher) = value.cast_exact::<Launcher>() {
            Fast::Native(launcher.clone().unbind())
        } else {
            Fast::Python(value.unbind())
        };
        let old = std::mem::replace(
            &mut *self.fast.lock().unwrap_or_else(|e| e.into_inner()),
            fast,
        );
        drop(old); // outside the lock: dropping a launcher may run Python code
    }

    /// The fast launcher is the one reference the GC cannot see through the instance
    /// dict (a user's `kernel._fast = other.method` could close a cycle).
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        // try_lock: the lock is never held while Python runs, but a traversal must not
        // block in any case.
        if let Ok(fast) = self.fast.try_lock() {
            match &*fast {
                Fast::None => {}
                Fast::Native(l) => visit.call(l)?,
                Fast::Python(f) => visit.call(f)?,
            }
        }
        Ok(())
    }

    fn __clear__(&self) {
        let old = std::mem::replace(
            &mut *self.fast.lock().unwrap_or_else(|e| e.into_inner()),
            Fast::None,
        );
        drop(old);
    }

    /// `kernel(*args)`: the fast launcher, else `self._call_general(args, kwargs)`.
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let py = slf.py();
        if kwargs.is_none_or(|k| k.is_empty()) {
            let launched = match slf.get().fast(py) {
                Fast::None => false,
                Fast::Native(l) => l.get().launch(py, args, None)?,
                Fast::Python(f) => f.bind(py).call1((args, py.None()))?.is_truthy()?,
            };
            if launched {
                return Ok(());
            }
        }
        slf.call_method1(pyo3::intern!(py, "_call_general"), (args, kwargs))?;
        Ok(())
    }
}
