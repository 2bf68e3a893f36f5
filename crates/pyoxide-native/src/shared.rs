//! [`SharedLimit`]: the dynamic shared memory one kernel function has been opted in to on
//! one device (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), shared between the
//! backend, which raises it each time its general path opts the function in further,
//! and the function's launchers, which read it on every call and decline a launch that
//! asks for more (the driver would refuse it). Shared rather than copied: a launcher
//! built before the function's first large launch (a variant's, built beside the kernel
//! it is a variant of) takes such launches from then on.

use std::sync::atomic::{AtomicU32, Ordering};

use oxide_abi::limits::DEFAULT_DYNAMIC_SHARED_BYTES;
use pyo3::prelude::*;

#[pyclass(frozen, module = "pyoxide._launch._native")]
pub struct SharedLimit {
    bytes: AtomicU32,
}

impl SharedLimit {
    pub fn get(&self) -> u32 {
        // Acquire: pairs with `raise_to`, which the backend calls after the driver
        // accepted the opt-in.
        self.bytes.load(Ordering::Acquire)
    }
}

#[pymethods]
impl SharedLimit {
    /// `bytes`: what the function may have now (every function may have 48 KiB).
    #[new]
    #[pyo3(signature = (bytes=DEFAULT_DYNAMIC_SHARED_BYTES))]
    fn new(bytes: u32) -> SharedLimit {
        SharedLimit {
            bytes: AtomicU32::new(bytes),
        }
    }

    /// Raise it to `bytes` once the function has been opted in to that much; it never
    /// falls (an opt-in only grows).
    fn raise_to(&self, bytes: u32) {
        self.bytes.fetch_max(bytes, Ordering::Release);
    }

    /// The dynamic shared memory the function may have now (bytes).
    #[getter]
    fn bytes(&self) -> u32 {
        self.get()
    }
}
