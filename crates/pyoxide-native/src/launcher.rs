//! [`Launcher`]: one kernel's compiled launcher on one device, built by the backend from
//! the kernel's fast plan (plan.rs) and its runtime (runtime.rs). Called as
//! `launcher(args, cfg)`, it takes the plain calls the argument rules of pyoxide/_launch/args.py
//! accept (a subset: exact CuPy arrays and PyTorch tensors, Python and NumPy scalars),
//! checks them, packs one parameter buffer (params.rs) and calls `cuLaunchKernel` with
//! `CU_LAUNCH_PARAM_BUFFER_POINTER` on the arrays' library's current stream. It returns
//! False for anything it is not sure about (the general path then accepts the call or
//! raises the documented error), True once launched, and raises only the runtime's
//! error for a failed launch.

use std::ffi::c_void;
use std::mem::MaybeUninit;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

use oxide_abi::limits::DEFAULT_DYNAMIC_SHARED_BYTES;

use crate::driver;
use crate::facts::LastArrays;
use crate::generation;
use crate::params::{self, Context};
use crate::plan::{GridKind, Plan};
use crate::runtime::Runtime;
use crate::shared::SharedLimit;

const MAX_GRID_X: u64 = (1 << 31) - 1;
const MAX_GRID_YZ: u64 = 65535;
/// Parameter buffers up to this size live on the stack (larger ones are allocated).
const STACK_WORDS: usize = 64;

/// What a launch attempt came to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Launched,
    /// Not a call this launcher takes: another may, else the general path.
    Declined,
    /// A call this launcher takes once the general path has made its derived value:
    /// no other launcher may take it instead.
    Deferred,
}

#[pyclass(frozen, module = "pyoxide._launch._native")]
pub struct Launcher {
    function: usize,
    device: i64,
    /// The CUDA context current when the launcher was built (the device's primary one).
    context: usize,
    plan: Plan,
    /// `cuLaunchKernelEx`, for a `#[dependent_launch]` plan where the driver has it: such a
    /// kernel starts under the end of the grid before it (its own `griddepcontrol.wait`
    /// orders its memory accesses after that grid's). None: `cuLaunchKernel`.
    launch_ex: Option<driver::LaunchKernelExFn>,
    /// The device's multiprocessors, for stride and persistent grids (0: unknown).
    multiprocessors: u32,
    /// How many clusters of a persistent cluster kernel the device runs at once
    /// (cuOccupancyMaxActiveClusters; 0: unknown, the SM count alone sizes its grid).
    active_clusters: u32,
    /// The most dynamic shared memory it launches with: what the function has been opted
    /// in to so far (shared.rs), or None for the default 48 KiB. A launch asking for more
    /// would fail in the driver; the general path opts in first, so such calls are its.
    shared_limit: Option<Py<SharedLimit>>,
    kernel: Py<PyString>,
    runtime: Py<Runtime>,
    /// The knob generation it was built in; it declines every call of another.
    generation: u64,
    /// What it read from the CuPy arrays of its last calls (facts.rs).
    last: LastArrays,
}

#[pymethods]
impl Launcher {
    /// `plan`: the kernel's `FastPlan` (pyoxide/_launch/fastplan.py); `function`: its
    /// `CUfunction` on `device`, whose context must be current; `shared_limit`: the
    /// dynamic shared memory `function` has been opted in to (None: the default 48 KiB).
    #[new]
    #[pyo3(signature = (
        plan, runtime, function, device, multiprocessors=0, active_clusters=0,
        shared_limit=None,
    ))]
    #[allow(clippy::too_many_arguments)] // a Python constructor's parameters
    fn new(
        py: Python<'_>,
        plan: &Bound<'_, PyAny>,
        runtime: Bound<'_, Runtime>,
        function: usize,
        device: i64,
        multiprocessors: u32,
        active_clusters: u32,
        shared_limit: Option<Py<SharedLimit>>,
    ) -> PyResult<Launcher> {
        let plan = Plan::read(plan)?;
        let plan_params = plan.layout.passed;
        let context = match runtime.get().driver.current_context() {
            Some(ctx) if ctx != 0 => ctx,
            _ => {
                return Err(PyRuntimeError::new_err(
                    "no current CUDA context: build the launcher after a launch on the device",
                ));
            }
        };
        let launch_ex = runtime
            .get()
            .driver
            .launch_kernel_ex
            .filter(|_| plan.dependent);
        Ok(Launcher {
            function,
            device,
            context,
            launch_ex,
            kernel: PyString::new(py, &plan.kernel).unbind(),
            plan,
            multiprocessors,
            active_clusters,
            shared_limit,
            runtime: runtime.unbind(),
            generation: generation::current(),
            last: LastArrays::new(plan_params),
        })
    }

    /// Launch `args` with `cfg` = (gx, gy, gz, bx, by, bz, shared_mem), or sized as a
    /// plain call when `cfg` is None. False: declined, nothing launched.
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyAny>,
        cfg: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let Ok(args) = args.cast_exact::<PyTuple>() else {
            return Ok(false);
        };
        let cfg = if cfg.is_none() {
            None
        } else {
            match parse_config(cfg) {
                Some(cfg) => Some(cfg),
                None => return Ok(false),
            }
        };
        Ok(self.launch(py, args, cfg)? == Outcome::Launched)
    }

    /// Bytes in the packed parameter buffer.
    #[getter]
    fn buffer_size(&self) -> usize {
        self.plan.layout.size
    }

    #[getter]
    fn device(&self) -> i64 {
        self.device
    }

    /// The most dynamic shared memory it launches with now (bytes).
    #[getter]
    fn shared_limit(&self) -> u32 {
        self.shared_limit
            .as_ref()
            .map_or(DEFAULT_DYNAMIC_SHARED_BYTES, |limit| limit.get().get())
    }

    /// Whether CuPy's current stream comes from its C function (else a Python call).
    #[getter]
    fn stream_from_capsule(&self) -> bool {
        self.runtime.get().stream_from_capsule()
    }

    /// The knob generation it was built in.
    #[getter]
    fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether it takes calls now (built in the current knob generation).
    #[getter]
    fn current(&self) -> bool {
        self.generation == generation::current()
    }
}

impl Launcher {
    /// Launch `args` with `cfg` (gx, gy, gz, bx, by, bz, shared_mem), or sized as a plain
    /// call when `cfg` is None.
    pub(crate) fn launch(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        cfg: Option<[u32; 7]>,
    ) -> PyResult<Outcome> {
        if self.generation != generation::current() {
            return Ok(Outcome::Declined); // a knob changed: the general path applies it
        }
        let size = self.plan.layout.size;
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
    ) -> PyResult<Outcome> {
        let runtime = self.runtime.get();
        let cx = Context {
            last: &self.last,
            libraries: &runtime.libraries,
            scalars: &runtime.scalars,
            device: self.device,
        };
        let layout = &self.plan.layout;
        let Some(library) = layout.pack(&cx, args, buf) else {
            return Ok(Outcome::Declined);
        };
        if !self.plan.bucket.iter().all(|b| b.holds(layout, buf)) {
            return Ok(Outcome::Declined); // a tuned choice for other shapes
        }
        if runtime.driver.current_context() != Some(self.context) {
            return Ok(Outcome::Declined); // another device is current: the general path
        }
        let Some([gx, gy, gz, bx, by, bz, smem]) = self.config(buf, cfg) else {
            return Ok(Outcome::Declined);
        };
        if smem > DEFAULT_DYNAMIC_SHARED_BYTES && smem > self.shared_limit() {
            return Ok(Outcome::Declined); // the general path opts the function in first
        }
        if gx == 0 {
            return Ok(Outcome::Launched); // an empty output: nothing to do
        }
        if let Some(derived) = &self.plan.derived {
            let key = derived.key(layout, buf, self.device);
            let Some((ptr, len)) = derived.values.get().lookup(&key) else {
                return Ok(Outcome::Deferred);
            };
            let at = layout.params[derived.param].offset;
            params::put(buf, at, &ptr.to_ne_bytes());
            params::put(buf, at + 8, &len.to_ne_bytes());
        }
        let Some(library) = library.or_else(|| runtime.libraries.first()) else {
            return Ok(Outcome::Declined);
        };
        let stream = library.stream(py, self.device)?;
        let kernel = self.kernel.bind(py);
        let previous = runtime.record.get().replace(kernel);

        // SAFETY: the function handle came from CuPy for this device; the buffer is this
        // call's own (on its stack), so it stays valid and unshared while the GIL is
        // released around the driver call, as CuPy does: a full launch queue blocks there.
        let (function, buffer, launch) = (
            self.function,
            buf.as_mut_ptr() as usize,
            runtime.driver.launch_kernel,
        );
        let launch_ex = self.launch_ex;
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
            let stream = stream as usize as *mut c_void;
            if let Some(launch_ex) = launch_ex {
                let mut attr = driver::LaunchAttribute::programmatic_stream_serialization();
                let config = driver::LaunchConfig {
                    grid: [gx, gy, gz],
                    block: [bx, by, bz],
                    shared_mem: smem,
                    stream,
                    attrs: &raw mut attr,
                    num_attrs: 1,
                };
                return launch_ex(
                    &raw const config,
                    function as *mut c_void,
                    std::ptr::null_mut(),
                    extra.as_mut_ptr(),
                );
            }
            launch(
                function as *mut c_void,
                gx,
                gy,
                gz,
                bx,
                by,
                bz,
                smem,
                stream,
                std::ptr::null_mut(),
                extra.as_mut_ptr(),
            )
        });
        if rc == 0 {
            return Ok(Outcome::Launched);
        }
        let text = runtime.driver.error_text(rc);
        Err(runtime.failed(py, kernel, previous, &text))
    }

    /// (gx, gy, gz, bx, by, bz, smem): `cfg`, or sized by the plan's grid rule.
    fn config(&self, buf: &[u8], cfg: Option<[u32; 7]>) -> Option<[u32; 7]> {
        if cfg.is_some() {
            return cfg;
        }
        let grid = self.plan.grid.as_ref()?;
        let layout = &self.plan.layout;
        let [mut bx, by, bz] = grid.block;
        let blocks = |tile: &[u32; 3]| {
            let mut blocks = [1u64; 3];
            for (axis, n) in layout
                .shape_of(buf, grid.param)
                .iter()
                .rev()
                .enumerate()
                .take(3)
            {
                blocks[axis] = n.div_ceil(u64::from(tile[axis]));
            }
            blocks
        };
        // The blocks that are resident at once (none known without the SM count).
        let resident = |blocks_per_sm: u32| {
            (self.multiprocessors != 0)
                .then(|| u64::from(blocks_per_sm) * u64::from(self.multiprocessors))
        };
        let g = match &grid.kind {
            GridKind::Elements { per_block } => {
                [layout.elements(buf, grid.param).div_ceil(*per_block), 1, 1]
            }
            GridKind::Stride {
                per_block,
                blocks_per_sm,
            } => {
                let most = resident(*blocks_per_sm)?;
                let cover = layout.elements(buf, grid.param).div_ceil(*per_block);
                // An empty input still gets one block: the kernel may have an output to
                // write (as pyoxide/_launch/policy.py sizes it).
                [cover.min(most).max(1), 1, 1]
            }
            GridKind::Tiles { tile } => {
                let g = blocks(tile);
                if g.contains(&0) { [0, g[1], g[2]] } else { g }
            }
            GridKind::Persistent {
                tile,
                blocks_per_sm,
                cluster,
            } => {
                // Whole clusters, one per tile, as many as fit (at least one), and no
                // more than run at once where the driver said.
                let (most, cluster) = (resident(*blocks_per_sm)?, u64::from(*cluster));
                let tiles: u64 = blocks(tile).iter().product();
                let mut fit = (most / cluster).max(1);
                if self.active_clusters != 0 {
                    fit = fit.min(u64::from(self.active_clusters));
                }
                [tiles.min(fit) * cluster, 1, 1]
            }
            GridKind::Rows {
                least,
                columns_per_warp,
                cols,
                blocks_per_sm,
            } => {
                let (rows, cols) = match cols {
                    None => {
                        let shape = layout.shape_of(buf, grid.param);
                        (shape[0], shape[1])
                    }
                    Some(c) => {
                        // A row length that is not positive or does not divide the
                        // length: the general path says so.
                        let cols = u64::try_from(layout.integer_of(buf, *c)?).ok()?;
                        let n = layout.elements(buf, grid.param);
                        if cols == 0 || !n.is_multiple_of(cols) {
                            return None;
                        }
                        (n / cols, cols)
                    }
                };
                let warps = cols.max(1).div_ceil(*columns_per_warp);
                let threads = 32u64.saturating_mul(warps).min(u64::from(bx));
                bx = threads.max(u64::from(*least)) as u32;
                if *blocks_per_sm == 0 {
                    [rows, 1, 1]
                } else {
                    // The kernel walks rows: no more blocks than fill the SMs.
                    [rows.min(resident(*blocks_per_sm)?), 1, 1]
                }
            }
        };
        if g[0] > MAX_GRID_X || g[1] > MAX_GRID_YZ || g[2] > MAX_GRID_YZ {
            return None; // the general path says which dimension is too large
        }
        Some([
            g[0] as u32,
            g[1] as u32,
            g[2] as u32,
            bx,
            by,
            bz,
            self.plan.shared_mem,
        ])
    }

    pub(crate) fn device_id(&self) -> i64 {
        self.device
    }

    pub(crate) fn is_current(&self) -> bool {
        self.generation == generation::current()
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
