//! The CUDA driver entry points the launcher calls, as plain function pointers: resolved
//! from `libcuda.so.1`, or injected (tests pass fakes; the benchmark passes the no-op
//! functions below). `cuLaunchKernelEx` is optional: without it (injected entry points, a
//! driver older than CUDA 12) a `#[dependent_launch]` kernel launches as an ordinary one,
//! which is correct (its `griddepcontrol.wait` returns at once).

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

pub type CuResult = c_int;

pub type LaunchKernelFn = unsafe extern "C" fn(
    f: *mut c_void,
    grid_x: c_uint,
    grid_y: c_uint,
    grid_z: c_uint,
    block_x: c_uint,
    block_y: c_uint,
    block_z: c_uint,
    shared_mem: c_uint,
    stream: *mut c_void,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CuResult;
/// `CUlaunchConfig` (cuda.h, CUDA 12): the launch's dimensions and stream, and its
/// attributes.
#[repr(C)]
pub struct LaunchConfig {
    pub grid: [c_uint; 3],
    pub block: [c_uint; 3],
    pub shared_mem: c_uint,
    pub stream: *mut c_void,
    pub attrs: *mut LaunchAttribute,
    pub num_attrs: c_uint,
}

/// `CUlaunchAttribute`: an id, padded to 8 bytes, and a 64-byte value union, of which the
/// launcher sets only the first `int`.
#[repr(C)]
pub struct LaunchAttribute {
    pub id: c_uint,
    pub pad: [u8; 4],
    pub value: [c_int; 16],
}

/// `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION` (cuda.h): a non-zero value
/// (`programmaticStreamSerializationAllowed`) lets the grid start before the one before it
/// on the stream has completed, as that one's blocks trigger or exit.
pub const LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: c_uint = 6;

impl LaunchAttribute {
    /// The programmatic-stream-serialisation attribute, allowed.
    pub fn programmatic_stream_serialization() -> LaunchAttribute {
        let mut value = [0; 16];
        value[0] = 1;
        LaunchAttribute {
            id: LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
            pad: [0; 4],
            value,
        }
    }
}

pub type LaunchKernelExFn = unsafe extern "C" fn(
    config: *const LaunchConfig,
    f: *mut c_void,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CuResult;
pub type CtxGetCurrentFn = unsafe extern "C" fn(ctx: *mut *mut c_void) -> CuResult;
pub type GetErrorTextFn =
    unsafe extern "C" fn(error: CuResult, text: *mut *const c_char) -> CuResult;

// cuLaunchKernel's `extra` keys (cuda.h).
pub const LAUNCH_PARAM_END: usize = 0;
pub const LAUNCH_PARAM_BUFFER_POINTER: usize = 1;
pub const LAUNCH_PARAM_BUFFER_SIZE: usize = 2;

#[derive(Clone, Copy)]
pub struct Driver {
    pub launch_kernel: LaunchKernelFn,
    pub launch_kernel_ex: Option<LaunchKernelExFn>,
    pub ctx_get_current: CtxGetCurrentFn,
    pub get_error_name: Option<GetErrorTextFn>,
    pub get_error_string: Option<GetErrorTextFn>,
}

impl Driver {
    /// The entry points of `libcuda.so.1`, loaded once per process and never unloaded.
    pub fn from_libcuda() -> Result<Driver, String> {
        static DRIVER: OnceLock<Result<Driver, String>> = OnceLock::new();
        DRIVER.get_or_init(load_libcuda).clone()
    }

    /// Entry points given as addresses (0 for the optional error-text functions and
    /// `cuLaunchKernelEx`).
    ///
    /// # Safety
    /// Each non-zero address must be a C function with the driver function's signature,
    /// alive for as long as any launcher built from it.
    pub unsafe fn from_addresses(
        launch: usize,
        ctx: usize,
        name: usize,
        string: usize,
        launch_ex: usize,
    ) -> Result<Driver, String> {
        if launch == 0 || ctx == 0 {
            return Err("cuLaunchKernel and cuCtxGetCurrent must be non-null".into());
        }
        // SAFETY: non-null, and the caller vouches for the signatures.
        unsafe {
            Ok(Driver {
                launch_kernel: std::mem::transmute::<usize, LaunchKernelFn>(launch),
                launch_kernel_ex: (launch_ex != 0)
                    .then(|| std::mem::transmute::<usize, LaunchKernelExFn>(launch_ex)),
                ctx_get_current: std::mem::transmute::<usize, CtxGetCurrentFn>(ctx),
                get_error_name: (name != 0)
                    .then(|| std::mem::transmute::<usize, GetErrorTextFn>(name)),
                get_error_string: (string != 0)
                    .then(|| std::mem::transmute::<usize, GetErrorTextFn>(string)),
            })
        }
    }

    /// The calling thread's current context; None when the call fails.
    pub fn current_context(&self) -> Option<usize> {
        let mut ctx: *mut c_void = std::ptr::null_mut();
        // SAFETY: `ctx` is a valid out-pointer.
        let rc = unsafe { (self.ctx_get_current)(&mut ctx) };
        (rc == 0).then_some(ctx as usize)
    }

    /// "CUDA_ERROR_X: description", as CuPy words a CUDADriverError.
    pub fn error_text(&self, code: CuResult) -> String {
        let name = self.get_error_name.and_then(|f| text_of(f, code));
        let string = self.get_error_string.and_then(|f| text_of(f, code));
        match (name, string) {
            (Some(n), Some(s)) => format!("{n}: {s}"),
            (Some(n), None) => n,
            _ => format!("CUDA error {code}"),
        }
    }
}

fn text_of(f: GetErrorTextFn, code: CuResult) -> Option<String> {
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: `text` is a valid out-pointer; the driver returns a static C string.
    let rc = unsafe { f(code, &mut text) };
    if rc != 0 || text.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated (driver contract).
    Some(
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned(),
    )
}

fn load_libcuda() -> Result<Driver, String> {
    // SAFETY: loading the CUDA driver runs its initialisers, which have no preconditions.
    let lib = unsafe { libloading::Library::new("libcuda.so.1") }
        .map_err(|e| format!("cannot load libcuda.so.1 (the NVIDIA driver): {e}"))?;
    let lib: &'static libloading::Library = Box::leak(Box::new(lib));
    // SAFETY: each symbol is declared with its cuda.h signature.
    unsafe {
        let launch = *lib
            .get::<LaunchKernelFn>(b"cuLaunchKernel\0")
            .map_err(|e| format!("libcuda.so.1 has no cuLaunchKernel: {e}"))?;
        let launch_ex = lib
            .get::<LaunchKernelExFn>(b"cuLaunchKernelEx\0")
            .ok()
            .map(|s| *s);
        let ctx = *lib
            .get::<CtxGetCurrentFn>(b"cuCtxGetCurrent\0")
            .map_err(|e| format!("libcuda.so.1 has no cuCtxGetCurrent: {e}"))?;
        let name = lib
            .get::<GetErrorTextFn>(b"cuGetErrorName\0")
            .ok()
            .map(|s| *s);
        let string = lib
            .get::<GetErrorTextFn>(b"cuGetErrorString\0")
            .ok()
            .map(|s| *s);
        Ok(Driver {
            launch_kernel: launch,
            launch_kernel_ex: launch_ex,
            ctx_get_current: ctx,
            get_error_name: name,
            get_error_string: string,
        })
    }
}

// The layouts cuda.h gives these structs on 64-bit targets.
const _: () = assert!(std::mem::size_of::<LaunchAttribute>() == 72);
const _: () = assert!(std::mem::offset_of!(LaunchConfig, stream) == 32);
const _: () = assert!(std::mem::size_of::<LaunchConfig>() == 56);

/// A cuLaunchKernel that does nothing: for measuring the launcher's own cost.
pub unsafe extern "C" fn noop_launch_kernel(
    _f: *mut c_void,
    _gx: c_uint,
    _gy: c_uint,
    _gz: c_uint,
    _bx: c_uint,
    _by: c_uint,
    _bz: c_uint,
    _smem: c_uint,
    _stream: *mut c_void,
    _params: *mut *mut c_void,
    _extra: *mut *mut c_void,
) -> CuResult {
    0
}

/// A cuCtxGetCurrent that always reports the same (fake) context.
pub unsafe extern "C" fn noop_ctx_get_current(ctx: *mut *mut c_void) -> CuResult {
    // SAFETY: the caller passes a valid out-pointer.
    unsafe { *ctx = std::ptr::without_provenance_mut(0x1) };
    0
}
