//! The generation of the launch knobs (`PYOXIDE_SYNC`, `PYOXIDE_BACKEND`).
//!
//! pyoxide/_manifest/knobs.py, the only reader of the environment, counts the changes of those
//! variables it has seen; pyoxide/_launch/kernel.py publishes that count here before every
//! launch it makes (and `pyoxide.reload_knobs()` does at once). A launcher remembers the
//! generation it was built in and declines every call of another one, so the general
//! path, which reads the knobs itself, applies the new values and builds launchers for
//! them. One atomic load per call replaces reading the environment from here.

use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::prelude::*;

static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The generation published last.
pub fn current() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// Publish the knobs' generation (pyoxide/_manifest/knobs.py's `launch_generation()`).
#[pyfunction]
pub fn set_knob_generation(generation: u64) {
    GENERATION.store(generation, Ordering::Relaxed);
}

/// The generation published last.
#[pyfunction]
pub fn knob_generation() -> u64 {
    current()
}
