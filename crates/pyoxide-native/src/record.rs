//! [`LaunchRecord`]: the last kernel a backend launched, which a trap message names ("'k'
//! or an earlier launch (the last one was 'j')"). The backend owns one and hands it to
//! both of its launch paths: the general one swaps it in Python, the compiled one here.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::PyString;

#[pyclass(frozen, module = "pyoxide._launch._native")]
pub struct LaunchRecord {
    last: Mutex<Option<Py<PyString>>>,
}

impl LaunchRecord {
    /// Record `kernel` as the last launch; return the one before it.
    pub fn replace(&self, kernel: &Bound<'_, PyString>) -> Option<Py<PyString>> {
        let new = Some(kernel.clone().unbind());
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::replace(&mut *last, new)
    }
}

#[pymethods]
impl LaunchRecord {
    #[new]
    fn new() -> LaunchRecord {
        LaunchRecord {
            last: Mutex::new(None),
        }
    }

    /// Record `kernel` as the last launch; return the one before it (None at first).
    fn swap(&self, kernel: Bound<'_, PyString>) -> Option<Py<PyString>> {
        self.replace(&kernel)
    }

    /// The kernel launched last, or None.
    #[getter]
    fn last(&self, py: Python<'_>) -> Option<Py<PyString>> {
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        last.as_ref().map(|k| k.clone_ref(py))
    }
}
