//! The environment variables that change which path a launch takes (`PYOXIDE_SYNC`,
//! `PYOXIDE_BACKEND`, read by pyoxide/_knobs.py). A launcher remembers their values when
//! it is built and declines every call once either differs, so the general path sees the
//! change, drops the launcher and applies the new setting.
//!
//! They are read where pyoxide/_knobs.py reads them, `os.environ`: its backing dict
//! (`os.environ._data`, bytes to bytes on POSIX), two dict lookups per call. Where that
//! dict is not there (another Python), the C library's `getenv`, which `os.environ`
//! writes through to.

use std::ffi::{CStr, c_char};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

unsafe extern "C" {
    fn getenv(name: *const c_char) -> *const c_char;
}

const NAMES: [&CStr; 2] = [c"PYOXIDE_SYNC", c"PYOXIDE_BACKEND"];

pub enum Snapshot {
    Environ {
        data: Py<PyDict>,
        keys: [Py<PyBytes>; 2],
        values: [Option<Py<PyAny>>; 2],
    },
    Getenv([Option<Vec<u8>>; 2]),
}

fn c_getenv(name: &CStr) -> Option<&'static [u8]> {
    // SAFETY: a NUL-terminated name; the result, when not null, is a NUL-terminated string
    // that stays valid until the variable is set again, which needs the GIL we hold.
    unsafe {
        let p = getenv(name.as_ptr());
        (!p.is_null()).then(|| CStr::from_ptr(p).to_bytes())
    }
}

impl Snapshot {
    pub fn now(py: Python<'_>) -> Snapshot {
        let data = py
            .import("os")
            .and_then(|os| os.getattr("environ"))
            .and_then(|e| e.getattr("_data"))
            .ok()
            .and_then(|d| d.cast_into_exact::<PyDict>().ok());
        match data {
            Some(data) => {
                let keys = NAMES.map(|n| PyBytes::new(py, n.to_bytes()).unbind());
                let values = [0, 1].map(|i| {
                    data.get_item(keys[i].bind(py))
                        .ok()
                        .flatten()
                        .map(Bound::unbind)
                });
                Snapshot::Environ {
                    data: data.unbind(),
                    keys,
                    values,
                }
            }
            None => Snapshot::Getenv(NAMES.map(|n| c_getenv(n).map(<[u8]>::to_vec))),
        }
    }

    /// Whether both variables still have the values they had when taken.
    pub fn current(&self, py: Python<'_>) -> bool {
        match self {
            Snapshot::Environ { data, keys, values } => {
                let data = data.bind(py);
                keys.iter().zip(values).all(|(key, was)| {
                    match (data.get_item(key.bind(py)).ok().flatten(), was) {
                        (None, None) => true,
                        (Some(now), Some(was)) => now.is(was) || now.eq(was).unwrap_or(false),
                        _ => false,
                    }
                })
            }
            Snapshot::Getenv(was) => was
                .iter()
                .zip(NAMES)
                .all(|(was, name)| was.as_deref() == c_getenv(name)),
        }
    }
}
