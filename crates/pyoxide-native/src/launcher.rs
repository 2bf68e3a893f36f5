//! [`Launcher`]: one kernel's compiled launcher on one device. Called as
//! `launcher(args, cfg)`, it takes the plain calls the argument rules of pyoxide/_args.py
//! accept (a subset: exact CuPy arrays, Python scalars), checks them, packs one parameter
//! buffer (params.rs) and calls `cuLaunchKernel` with `CU_LAUNCH_PARAM_BUFFER_POINTER`.
//! It returns False for anything it is not sure about (the general path then accepts the
//! call or raises the documented error), True once launched, and raises only what the
//! error callback raises for a failed launch.

use std::ffi::c_void;
use std::mem::MaybeUninit;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyString, PyTuple, PyType};

use crate::driver::{self, Driver};
use crate::knobs;
use crate::params::{self, Layout, Names};
use crate::stream::CurrentStream;

const MAX_GRID_X: u64 = (1 << 31) - 1;
/// Parameter buffers up to this size live on the stack (larger ones are allocated).
const STACK_WORDS: usize = 64;

/// `(param, block, tile)` from pyoxide/_policy.py's `tile_rule`.
type TileRule = (usize, (u32, u32, u32), (u32, u32, u32));

#[pyclass(frozen, module = "pyoxide._native")]
pub struct Launcher {
    function: usize,
    device: i64,
    /// The CUDA context current when the launcher was built (the device's primary one).
    context: usize,
    layout: Layout,
    names: Names,
    grid_param: Option<usize>,
    default_block: u32,
    /// A plain call launches `ceil(n / elements_per_block)` blocks (the kernel's launch
    /// policy, computed in Python: pyoxide/_policy.py's `plain_rule`).
    elements_per_block: u64,
    /// Or (`tile_rule`): a shaped parameter, the block, and the extents each block covers;
    /// the grid covers the parameter's extents, x over the last.
    tiles: Option<(usize, [u32; 3], [u32; 3])>,
    ndarray: Py<PyType>,
    current_stream: CurrentStream,
    last_kernel: LastKernel,
    kernel: Py<PyString>,
    on_error: Py<PyAny>,
    driver: Driver,
    /// PYOXIDE_SYNC and PYOXIDE_BACKEND when built: any change declines every call.
    knobs: knobs::Snapshot,
}

/// Where `backend._last_kernel` lives (named in trap messages: "'k' or an earlier launch").
enum LastKernel {
    /// The backend's instance dict, read and written directly: a plain instance attribute
    /// (no class attribute of that name) is exactly its dict entry, and two dict
    /// operations cost a fraction of a getattr and a setattr.
    Dict { dict: Py<PyDict>, key: Py<PyString> },
    /// Anything else: getattr and setattr.
    Attr {
        backend: Py<PyAny>,
        key: Py<PyString>,
    },
}

impl LastKernel {
    fn new(backend: Bound<'_, PyAny>) -> PyResult<LastKernel> {
        let py = backend.py();
        let key = PyString::intern(py, "_last_kernel");
        if !backend.get_type().hasattr(&key)?
            && let Ok(dict) = backend.getattr(pyo3::intern!(py, "__dict__"))
            && let Ok(dict) = dict.cast_into_exact::<PyDict>()
        {
            return Ok(LastKernel::Dict {
                dict: dict.unbind(),
                key: key.unbind(),
            });
        }
        Ok(LastKernel::Attr {
            backend: backend.unbind(),
            key: key.unbind(),
        })
    }

    /// Record `kernel` as the last launch; return the one before it.
    fn replace<'py>(
        &self,
        py: Python<'py>,
        kernel: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match self {
            LastKernel::Dict { dict, key } => {
                let (dict, key) = (dict.bind(py), key.bind(py));
                let previous = match dict.get_item(key)? {
                    Some(p) => p,
                    None => {
                        return Err(pyo3::exceptions::PyAttributeError::new_err(
                            "the backend has no _last_kernel",
                        ));
                    }
                };
                dict.set_item(key, kernel)?;
                Ok(previous)
            }
            LastKernel::Attr { backend, key } => {
                let (backend, key) = (backend.bind(py), key.bind(py));
                let previous = backend.getattr(key)?;
                backend.setattr(key, kernel)?;
                Ok(previous)
            }
        }
    }
}

#[pymethods]
impl Launcher {
    /// `params`: one `(type, dtype, itemsize, mutable)` per kernel parameter, `dtype`
    /// None for scalars. `current_stream()` returns the current stream (its `.ptr` is
    /// read), unless `current_stream_capsule`, a capsule of CuPy's C function
    /// `intptr_t get_current_stream_ptr()` (see stream.rs), is given: it is called instead.
    /// `on_error(code, text, previous_kernel)` must raise.
    /// `entry_points`: addresses of (cuLaunchKernel, cuCtxGetCurrent, cuGetErrorName,
    /// cuGetErrorString), the last two may be 0; None resolves them from libcuda.so.1.
    #[new]
    #[pyo3(signature = (
        function, device, params, ndarray, current_stream, default_block, grid_param,
        backend, kernel, on_error, entry_points=None, current_stream_capsule=None,
        elements_per_block=None, tiles=None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        function: usize,
        device: i64,
        params: &Bound<'_, PyAny>,
        ndarray: Bound<'_, PyType>,
        current_stream: Bound<'_, PyAny>,
        default_block: u32,
        grid_param: Option<usize>,
        backend: Bound<'_, PyAny>,
        kernel: Bound<'_, PyString>,
        on_error: Bound<'_, PyAny>,
        entry_points: Option<(usize, usize, usize, usize)>,
        current_stream_capsule: Option<Bound<'_, PyCapsule>>,
        elements_per_block: Option<u64>,
        tiles: Option<TileRule>,
    ) -> PyResult<Launcher> {
        let driver = match entry_points {
            // SAFETY: the caller passes C functions of the documented signatures.
            Some((l, c, n, s)) => {
                unsafe { Driver::from_addresses(l, c, n, s) }.map_err(PyValueError::new_err)?
            }
            None => Driver::from_libcuda().map_err(PyOSError::new_err)?,
        };
        let context = match driver.current_context() {
            Some(ctx) if ctx != 0 => ctx,
            _ => {
                return Err(PyRuntimeError::new_err(
                    "no current CUDA context: build the launcher after a launch on the device",
                ));
            }
        };
        let layout = Layout::new(params)?;
        if default_block == 0 || elements_per_block == Some(0) {
            return Err(PyValueError::new_err(
                "default_block and elements_per_block must be positive",
            ));
        }
        if let Some(g) = grid_param
            && !matches!(
                layout.params.get(g).map(|p| &p.kind),
                Some(params::Kind::Array { .. })
            )
        {
            return Err(PyValueError::new_err(
                "grid_param must name an array parameter",
            ));
        }
        let tiles = tiles.map(|(t, b, e)| (t, [b.0, b.1, b.2], [e.0, e.1, e.2]));
        if let Some((t, block, tile)) = tiles
            && (block.contains(&0)
                || tile.contains(&0)
                || !matches!(
                    layout.params.get(t).map(|p| &p.kind),
                    Some(params::Kind::Shaped { .. })
                ))
        {
            return Err(PyValueError::new_err(
                "tiles must name a shaped array parameter, a positive block and tile",
            ));
        }
        Ok(Launcher {
            function,
            device,
            context,
            layout,
            names: Names::new(py),
            grid_param,
            default_block,
            elements_per_block: elements_per_block.unwrap_or(u64::from(default_block)),
            tiles,
            ndarray: ndarray.unbind(),
            current_stream: CurrentStream::new(current_stream, current_stream_capsule)?,
            last_kernel: LastKernel::new(backend)?,
            kernel: kernel.unbind(),
            on_error: on_error.unbind(),
            driver,
            knobs: knobs::Snapshot::now(py),
        })
    }

    /// Launch `args` with `cfg` = (gx, gy, gz, bx, by, bz, shared_mem), or with the grid
    /// sized from the output when `cfg` is None. False: declined, nothing launched.
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyAny>,
        cfg: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let Ok(args) = args.cast_exact::<PyTuple>() else {
            return Ok(false);
        };
        if cfg.is_none() {
            return self.launch(py, args, None);
        }
        match parse_config(cfg) {
            Some(cfg) => self.launch(py, args, Some(cfg)),
            None => Ok(false),
        }
    }

    /// Bytes in the packed parameter buffer.
    #[getter]
    fn buffer_size(&self) -> usize {
        self.layout.size
    }

    /// Whether the current stream comes from CuPy's C function (else a Python call).
    #[getter]
    fn stream_from_capsule(&self) -> bool {
        self.current_stream.is_function()
    }
}

impl Launcher {
    /// Launch `args` with `cfg` (gx, gy, gz, bx, by, bz, shared_mem), or with the grid
    /// sized from the output when `cfg` is None. False: declined, nothing launched.
    pub(crate) fn launch(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        cfg: Option<[u32; 7]>,
    ) -> PyResult<bool> {
        let size = self.layout.size;
        if size <= STACK_WORDS * 8 {
            let mut words = MaybeUninit::<[u64; STACK_WORDS]>::uninit();
            // SAFETY: the first `size` bytes of the (8-aligned) storage are zeroed, then
            // viewed as bytes; nothing reads beyond them.
            let buf = unsafe {
                let bytes = words.as_mut_ptr().cast::<u8>();
                std::ptr::write_bytes(bytes, 0, size);
                std::slice::from_raw_parts_mut(bytes, size)
            };
            self.run(py, args, cfg, buf)
        } else {
            let mut heap = vec![0u64; size.div_ceil(8)];
            // SAFETY: `heap` holds at least `size` initialised bytes.
            let buf =
                unsafe { std::slice::from_raw_parts_mut(heap.as_mut_ptr().cast::<u8>(), size) };
            self.run(py, args, cfg, buf)
        }
    }

    fn run(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        cfg: Option<[u32; 7]>,
        buf: &mut [u8],
    ) -> PyResult<bool> {
        if !self
            .layout
            .pack(&self.names, self.ndarray.bind(py), self.device, args, buf)
        {
            return Ok(false);
        }
        if self.driver.current_context() != Some(self.context) {
            return Ok(false); // another device is current: the general path says so
        }
        if !self.knobs.current(py) {
            return Ok(false); // a knob changed: the general path drops this launcher
        }
        let Some([gx, gy, gz, bx, by, bz, smem]) = self.config(buf, cfg) else {
            return Ok(false);
        };
        if gx == 0 {
            return Ok(true); // an empty output: nothing to do
        }
        let stream = self.current_stream.get(py)?;
        let kernel = self.kernel.bind(py);
        let previous = self.last_kernel.replace(py, kernel)?;

        // SAFETY: the function handle came from CuPy for this device; the buffer is this
        // call's own (on its stack), so it stays valid and unshared while the GIL is
        // released around the driver call, as CuPy does: a full launch queue blocks there.
        let (function, buffer, launch) = (
            self.function,
            buf.as_mut_ptr() as usize,
            self.driver.launch_kernel,
        );
        let size = buf.len();
        let rc = py.detach(move || unsafe {
            let mut size = size;
            let mut extra: [*mut c_void; 5] = [
                driver::LAUNCH_PARAM_BUFFER_POINTER as *mut c_void,
                buffer as *mut c_void,
                driver::LAUNCH_PARAM_BUFFER_SIZE as *mut c_void,
                (&raw mut size).cast(),
                driver::LAUNCH_PARAM_END as *mut c_void,
            ];
            launch(
                function as *mut c_void,
                gx,
                gy,
                gz,
                bx,
                by,
                bz,
                smem,
                stream as usize as *mut c_void,
                std::ptr::null_mut(),
                extra.as_mut_ptr(),
            )
        });
        if rc == 0 {
            return Ok(true);
        }
        let text = self.driver.error_text(rc);
        self.on_error
            .bind(py)
            .call1((rc, text.as_str(), previous))?;
        Err(PyRuntimeError::new_err(format!(
            "launching '{}' failed: {text}",
            self.kernel.bind(py)
        )))
    }

    /// (gx, gy, gz, bx, by, bz, smem): `cfg`, or sized from the output.
    fn config(&self, buf: &[u8], cfg: Option<[u32; 7]>) -> Option<[u32; 7]> {
        if cfg.is_some() {
            return cfg;
        }
        if let Some((t, block, tile)) = self.tiles {
            let shape = self.layout.shape_of(buf, t);
            let mut grid = [1u64; 3];
            for (axis, n) in shape.iter().rev().enumerate().take(3) {
                grid[axis] = n.div_ceil(u64::from(tile[axis]));
            }
            if grid[0] > MAX_GRID_X || grid[1] > 65535 || grid[2] > 65535 {
                return None; // the general path says which dimension is too large
            }
            let gx = if grid.contains(&0) { 0 } else { grid[0] };
            return Some([
                gx as u32,
                grid[1] as u32,
                grid[2] as u32,
                block[0],
                block[1],
                block[2],
                0,
            ]);
        }
        let n = self.layout.length_of(buf, self.grid_param?);
        let gx = n.div_ceil(self.elements_per_block);
        if gx > MAX_GRID_X {
            return None;
        }
        Some([gx as u32, 1, 1, self.default_block, 1, 1, 0])
    }
}

/// A launch configuration (gx, gy, gz, bx, by, bz, shared_mem): an exact 7-tuple of ints
/// that fit u32; None for anything else.
pub(crate) fn parse_config(cfg: &Bound<'_, PyAny>) -> Option<[u32; 7]> {
    let cfg = cfg.cast_exact::<PyTuple>().ok()?;
    if cfg.len() != 7 {
        return None;
    }
    let mut out = [0u32; 7];
    for (o, v) in out.iter_mut().zip(cfg.iter_borrowed()) {
        *o = v.extract::<u32>().ok()?;
    }
    Some(out)
}
