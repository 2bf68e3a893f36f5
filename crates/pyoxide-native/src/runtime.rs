//! [`Runtime`]: what the launchers of one backend share, all of it passed in by the
//! backend (pyoxide/backends/cupy/_native.py): the driver's entry points, the array
//! libraries (bound through the backend's hook), the NumPy scalar table, the launch
//! record and the error hook.

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyType};

use crate::driver::Driver;
use crate::libraries::Libraries;
use crate::record::LaunchRecord;
use crate::scalars::Scalars;

#[pyclass(frozen, module = "pyoxide._launch._native")]
pub struct Runtime {
    pub driver: Driver,
    pub libraries: Libraries,
    pub scalars: Scalars,
    pub record: Py<LaunchRecord>,
    /// `on_error(kernel, previous_kernel, text) -> exception`: the exception a failed
    /// launch raises (the backend's, as its general path words it).
    on_error: Py<PyAny>,
}

#[pymethods]
impl Runtime {
    /// `bind_array_type(type)` returns `(kind, type, {rust type: dtype}, stream,
    /// stream_capsule)` for an array type the fast path may read, else None (see
    /// libraries.rs); `default_array_type` is bound at once and gives the stream of calls
    /// without arrays. `scalar_types`: NumPy scalar type -> 'f', 'i', 'u' or 'b';
    /// `host_ndarray`: numpy.ndarray (its 0-d arrays are scalars). `entry_points`:
    /// addresses of (cuLaunchKernel, cuCtxGetCurrent, cuGetErrorName, cuGetErrorString[,
    /// cuLaunchKernelEx]), all but the first two may be 0; None resolves them from
    /// libcuda.so.1.
    #[new]
    #[pyo3(signature = (
        *, bind_array_type, default_array_type, scalar_types, host_ndarray, record,
        on_error, entry_points=None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        bind_array_type: Bound<'_, PyAny>,
        default_array_type: Bound<'_, PyType>,
        scalar_types: Bound<'_, PyDict>,
        host_ndarray: Option<Bound<'_, PyType>>,
        record: Bound<'_, LaunchRecord>,
        on_error: Bound<'_, PyAny>,
        entry_points: Option<Vec<usize>>,
    ) -> PyResult<Runtime> {
        let driver = match entry_points.as_deref() {
            // SAFETY: the caller passes C functions of the documented signatures.
            Some(&[l, c, n, s, ref ex @ ..]) if ex.len() <= 1 => {
                unsafe { Driver::from_addresses(l, c, n, s, ex.first().copied().unwrap_or(0)) }
                    .map_err(PyValueError::new_err)?
            }
            Some(_) => {
                return Err(PyValueError::new_err(
                    "entry_points: (cuLaunchKernel, cuCtxGetCurrent, cuGetErrorName, \
                     cuGetErrorString[, cuLaunchKernelEx]) addresses",
                ));
            }
            None => Driver::from_libcuda().map_err(PyOSError::new_err)?,
        };
        let libraries = Libraries::new(bind_array_type);
        if libraries.bind_now(&default_array_type)?.is_none() {
            return Err(PyValueError::new_err(
                "bind_array_type refused the default array type",
            ));
        }
        Ok(Runtime {
            driver,
            libraries,
            scalars: Scalars::new(scalar_types, host_ndarray),
            record: record.unbind(),
            on_error: on_error.unbind(),
        })
    }

    /// Whether the default library's current stream comes from its C function (CuPy's
    /// `get_current_stream_ptr`) rather than a Python call.
    #[getter]
    pub fn stream_from_capsule(&self) -> bool {
        self.libraries
            .first()
            .is_some_and(|lib| lib.stream_from_capsule())
    }
}

impl Runtime {
    /// The error of a failed launch of `kernel` (`previous`: the launch before it).
    pub fn failed(
        &self,
        py: Python<'_>,
        kernel: &Bound<'_, PyString>,
        previous: Option<Py<PyString>>,
        text: &str,
    ) -> PyErr {
        match self.on_error.bind(py).call1((kernel, previous, text)) {
            Ok(exc) => PyErr::from_value(exc),
            Err(e) => e,
        }
    }
}
