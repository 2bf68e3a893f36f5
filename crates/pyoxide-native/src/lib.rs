//! `pyoxide._native`: the compiled launch fast path for CuPy arrays.
//!
//! A [`launcher::Launcher`] is built once per kernel and device by
//! pyoxide/backends/cupy/_native.py; [`kernel::KernelBase`] and [`kernel::ConfiguredBase`]
//! are the compiled `__call__` of pyoxide's kernel classes, which run it. Modules depend
//! on each other one way: kernel → launcher → params, stream, driver, knobs.

mod driver;
mod kernel;
mod knobs;
mod launcher;
mod params;
mod stream;

use std::ffi::c_void;

use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// Addresses of a cuLaunchKernel and a cuCtxGetCurrent that do nothing (the context is
/// always 0x1): `Launcher(..., entry_points=(*_noop_entry_points(), 0, 0))` measures the
/// launcher's own cost.
#[pyfunction]
fn _noop_entry_points() -> (usize, usize) {
    (
        driver::noop_launch_kernel as *const () as usize,
        driver::noop_ctx_get_current as *const () as usize,
    )
}

/// A capsule named like CuPy's `get_current_stream_ptr` (stream.rs) around a stand-in
/// that returns `value` as set by [`_test_set_stream`] (0 at first). For the benchmark
/// and tests.
#[pyfunction]
fn _test_stream_capsule(py: Python<'_>) -> PyResult<Bound<'_, PyCapsule>> {
    let f: extern "C" fn() -> isize = stream::test_current_stream;
    let pointer = std::ptr::NonNull::new(f as *mut c_void).expect("a function is non-null");
    // SAFETY: a static function of the signature the name declares.
    unsafe { PyCapsule::new_with_pointer(py, pointer, stream::SIGNATURE) }
}

/// What `_test_stream_capsule`'s function returns from now on; None: it raises.
#[pyfunction]
fn _test_set_stream(value: Option<i64>) {
    let value = value.map_or(i64::MIN, |v| v.max(i64::MIN + 1));
    stream::TEST_STREAM.store(value, std::sync::atomic::Ordering::Relaxed);
}

#[pymodule]
#[pyo3(name = "_native")]
fn native_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<launcher::Launcher>()?;
    m.add_class::<kernel::KernelBase>()?;
    m.add_class::<kernel::ConfiguredBase>()?;
    // scripts/setup compares this with the sources' hash to rebuild a stale install.
    m.add(
        "_build_stamp",
        option_env!("PYOXIDE_NATIVE_STAMP").unwrap_or(""),
    )?;
    m.add_function(wrap_pyfunction!(_noop_entry_points, m)?)?;
    m.add_function(wrap_pyfunction!(_test_stream_capsule, m)?)?;
    m.add_function(wrap_pyfunction!(_test_set_stream, m)?)?;
    Ok(())
}
