//! [`KernelBase`] and [`ConfiguredBase`]: the calls `kernel(*args)` and
//! `kernel[grid, block](*args)`, in compiled code.
//!
//! `kernel(*args)` with a Python `Kernel.__call__` costs a Python frame (an args tuple, an
//! empty kwargs dict, an attribute read) before the launcher is even called. When this
//! module imports, pyoxide makes its kernels of a subclass of this class and `Kernel`
//! (pyoxide/_launch.py, `kernel_class`), so the interpreter calls
//! [`KernelBase::__call__`] straight from the call site: it runs the installed fast launcher and, only when that declines (or there
//! is none yet, or keywords were passed), calls the Python general path
//! `self._call_general(args, kwargs)`. Semantics are those of the Python `Kernel.__call__`.
//! `ConfiguredBase` does the same for `_Configured` (`kernel[grid, block]`), with the
//! configuration its Python `__init__` checked once.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use pyo3::{PyTraverseError, PyVisit};

use crate::launcher::{Launcher, parse_config};

/// The fast launcher a kernel holds (`kernel._fast`).
enum Fast {
    None,
    /// The native launcher, called without going through Python.
    Native(Py<Launcher>),
    /// Any other `fast(args, cfg) -> bool` (a stand-in in tests).
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

    /// Try the launch: `cfg` parsed for the native launcher, `cfg_obj` as given (None or
    /// the checked tuple) for a Python one. False: declined, nothing launched.
    fn launch(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        cfg: Option<[u32; 7]>,
        cfg_obj: Py<PyAny>,
    ) -> PyResult<bool> {
        match self {
            Fast::None => Ok(false),
            Fast::Native(l) => l.get().launch(py, args, cfg),
            Fast::Python(f) => f.bind(py).call1((args, cfg_obj))?.is_truthy(),
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
        if kwargs.is_none_or(|k| k.is_empty())
            && slf.get().fast(py).launch(py, args, None, py.None())?
        {
            return Ok(());
        }
        slf.call_method1(pyo3::intern!(py, "_call_general"), (args, kwargs))?;
        Ok(())
    }
}

/// What a configured call needs besides the arguments, set by `_Configured.__init__`.
struct Configured {
    /// `_kernel`: a kernel (a KernelBase, whose launcher is read directly) or a generic one.
    kernel: Option<Py<PyAny>>,
    /// `_checked`: the configuration the fast path may use, parsed and as given (for a
    /// Python fast launcher); None: every call takes the general path.
    checked: Option<([u32; 7], Py<PyTuple>)>,
}

#[pyclass(frozen, subclass, module = "pyoxide._native")]
pub struct ConfiguredBase {
    state: Mutex<Configured>,
}

impl ConfiguredBase {
    fn lock(&self) -> std::sync::MutexGuard<'_, Configured> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl ConfiguredBase {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> ConfiguredBase {
        ConfiguredBase {
            state: Mutex::new(Configured {
                kernel: None,
                checked: None,
            }),
        }
    }

    #[getter(_kernel)]
    fn get_kernel(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.lock().kernel.as_ref().map(|k| k.clone_ref(py))
    }

    #[setter(_kernel)]
    fn set_kernel(&self, kernel: Bound<'_, PyAny>) {
        let new = (!kernel.is_none()).then(|| kernel.unbind());
        let old = std::mem::replace(&mut self.lock().kernel, new);
        drop(old); // outside the lock
    }

    /// The checked configuration (gx, gy, gz, bx, by, bz, shared_mem), or None.
    #[getter(_checked)]
    fn get_checked(&self, py: Python<'_>) -> Option<Py<PyTuple>> {
        self.lock().checked.as_ref().map(|(_, t)| t.clone_ref(py))
    }

    #[setter(_checked)]
    fn set_checked(&self, checked: Bound<'_, PyAny>) -> PyResult<()> {
        let new = if checked.is_none() {
            None
        } else {
            let parsed = parse_config(&checked).ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(
                    "_checked must be None or a 7-tuple of ints that fit u32",
                )
            })?;
            Some((parsed, checked.cast_into_exact::<PyTuple>()?.unbind()))
        };
        let old = std::mem::replace(&mut self.lock().checked, new);
        drop(old);
        Ok(())
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Ok(state) = self.state.try_lock() {
            if let Some(k) = &state.kernel {
                visit.call(k)?;
            }
            if let Some((_, t)) = &state.checked {
                visit.call(t)?;
            }
        }
        Ok(())
    }

    fn __clear__(&self) {
        let old = std::mem::replace(
            &mut *self.lock(),
            Configured {
                kernel: None,
                checked: None,
            },
        );
        drop(old);
    }

    /// `kernel[grid, block](*args)`: the kernel's fast launcher with the checked
    /// configuration, else `self._call_general(args, kwargs)`.
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let py = slf.py();
        if kwargs.is_none_or(|k| k.is_empty()) {
            let (kernel, checked) = {
                let state = slf.get().lock();
                let checked = state.checked.as_ref().map(|(c, t)| (*c, t.clone_ref(py)));
                (state.kernel.as_ref().map(|k| k.clone_ref(py)), checked)
            };
            if let (Some(kernel), Some((cfg, cfg_tuple))) = (kernel, checked) {
                let kernel = kernel.bind(py);
                let fast = match kernel.cast::<KernelBase>() {
                    Ok(k) => k.get().fast(py),
                    Err(_) => match kernel.getattr(pyo3::intern!(py, "_fast"))? {
                        f if f.is_none() => Fast::None,
                        f => Fast::Python(f.unbind()),
                    },
                };
                if fast.launch(py, args, Some(cfg), cfg_tuple.into_any())? {
                    return Ok(());
                }
            }
        }
        slf.call_method1(pyo3::intern!(py, "_call_general"), (args, kwargs))?;
        Ok(())
    }
}
