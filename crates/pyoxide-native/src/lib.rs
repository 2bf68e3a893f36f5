//! `pyoxide._launch._native`: the compiled launch fast path, and the base classes of pyoxide's
//! kernels.
//!
//! The contract with Python, all of it passed in, none of it read from private state:
//! - a [`plan::Plan`], the one fast description of a kernel that pyoxide/_launch/fastplan.py
//!   builds from its manifest entry (parameters, grid rule, shared memory);
//! - a [`runtime::Runtime`] per backend: the driver's entry points, the array libraries
//!   it binds through a Python hook, the [`record::LaunchRecord`] of the last launch, and
//!   the error hook that makes the exception for a failed launch;
//! - the knob generation ([`generation`]), which pyoxide/_launch/kernel.py publishes from
//!   pyoxide/_manifest/knobs.py: a launcher declines every call of another generation.
//!
//! [`launcher::Launcher`] is built once per kernel and device by the backend;
//! [`kernel::KernelBase`] and [`kernel::ConfiguredBase`] are the compiled `__call__` of
//! pyoxide's `Kernel` classes, which try their launchers and otherwise call the general
//! path's hook. Modules depend on each other one way: kernel → launcher → params → facts,
//! launcher → shared, runtime → libraries → facts, stream; runtime → driver, record,
//! generation.

mod derived;
mod driver;
mod facts;
mod generation;
mod kernel;
mod launcher;
mod libraries;
mod params;
mod plan;
mod record;
mod runtime;
mod scalars;
mod shared;
mod stream;

use std::ffi::c_void;

use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// Addresses of a cuLaunchKernel and a cuCtxGetCurrent that do nothing (the context is
/// always 0x1): a Runtime made with `entry_points=(*_noop_entry_points(), 0, 0)` measures
/// the launcher's own cost.
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
    m.add_class::<runtime::Runtime>()?;
    m.add_class::<record::LaunchRecord>()?;
    m.add_class::<derived::DerivedValues>()?;
    m.add_class::<shared::SharedLimit>()?;
    m.add_class::<kernel::KernelBase>()?;
    m.add_class::<kernel::ConfiguredBase>()?;
    m.add_function(wrap_pyfunction!(generation::set_knob_generation, m)?)?;
    m.add_function(wrap_pyfunction!(generation::knob_generation, m)?)?;
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
