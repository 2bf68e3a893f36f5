//! Derived parameters: arguments no caller passes, which the launcher makes from the
//! ones they do (a kernel's TMA tensor maps, made from its arrays' addresses and
//! extents by the backend). Making one is the general path's work (pyoxide/_launch/kernel.py
//! asks the backend); it keeps the result in a [`DerivedValues`] shared with the
//! kernel's launchers, keyed by the device and the pointer and extents of the arrays it
//! derives from. A launcher that finds the key packs the value; one that does not
//! defers the call to the general path, which makes it (never a slower stand-in).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::params::Layout;

/// A derived slice's value: its pointer and length, and the object that owns the
/// memory (kept alive while the value is kept).
struct Value {
    ptr: u64,
    len: u64,
    _owner: Py<PyAny>,
}

#[derive(Default)]
struct Table {
    values: HashMap<Vec<u64>, Value>,
    order: VecDeque<Vec<u64>>,
}

#[pyclass(frozen, module = "pyoxide._launch._native")]
pub struct DerivedValues {
    capacity: usize,
    table: Mutex<Table>,
}

impl DerivedValues {
    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn lookup(&self, key: &[u64]) -> Option<(u64, u64)> {
        self.lock().values.get(key).map(|v| (v.ptr, v.len))
    }
}

#[pymethods]
impl DerivedValues {
    /// Keeps the last `capacity` values (the oldest goes first).
    #[new]
    fn new(capacity: usize) -> PyResult<DerivedValues> {
        if capacity == 0 {
            return Err(PyValueError::new_err("capacity must be positive"));
        }
        Ok(DerivedValues {
            capacity,
            table: Mutex::new(Table::default()),
        })
    }

    /// Keep `(ptr, len)`, owned by `owner`, under `key` (device, then each source array's
    /// pointer and extents).
    fn insert(&self, key: Vec<u64>, ptr: u64, len: u64, owner: Py<PyAny>) {
        let value = Value {
            ptr,
            len,
            _owner: owner,
        };
        let evicted = {
            let mut table = self.lock();
            let mut evicted = Vec::new();
            if table.values.insert(key.clone(), value).is_none() {
                table.order.push_back(key);
            }
            while table.order.len() > self.capacity {
                if let Some(old) = table.order.pop_front() {
                    evicted.extend(table.values.remove(&old));
                }
            }
            evicted
        };
        drop(evicted); // outside the lock: dropping an owner may run Python code
    }

    /// `(ptr, len)` kept under `key`, or None.
    fn get(&self, key: Vec<u64>) -> Option<(u64, u64)> {
        self.lookup(&key)
    }

    fn __len__(&self) -> usize {
        self.lock().values.len()
    }
}

/// The plan's `derived`: which parameter is derived, from which arrays, and the values.
pub struct Derived {
    pub param: usize,
    sources: Vec<usize>,
    pub values: Py<DerivedValues>,
}

impl Derived {
    pub fn read(derived: &Bound<'_, PyAny>, layout: &Layout) -> PyResult<Derived> {
        let py = derived.py();
        let param: usize = derived.getattr(pyo3::intern!(py, "param"))?.extract()?;
        let sources: Vec<usize> = derived.getattr(pyo3::intern!(py, "sources"))?.extract()?;
        let values = derived
            .getattr(pyo3::intern!(py, "values"))?
            .cast_into::<DerivedValues>()?
            .unbind();
        if param < layout.passed
            || param >= layout.params.len()
            || sources
                .iter()
                .any(|&s| !layout.is_array(s) || s >= layout.passed)
        {
            return Err(PyValueError::new_err(
                "a derived parameter comes after the passed ones and derives from arrays",
            ));
        }
        Ok(Derived {
            param,
            sources,
            values,
        })
    }

    /// The key of a packed call on `device`: the device, then each source's pointer and
    /// extents.
    pub fn key(&self, layout: &Layout, buf: &[u8], device: i64) -> Vec<u64> {
        let mut key = vec![device as u64];
        for &s in &self.sources {
            key.push(layout.pointer_of(buf, s));
            key.extend(layout.shape_of(buf, s));
        }
        key
    }
}
