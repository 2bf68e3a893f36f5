//! [`KernelBase`] and [`ConfiguredBase`]: the base classes of pyoxide's `Kernel`,
//! `GenericKernel` and `_Configured` (pyoxide/_launch/kernel.py), whose calls `kernel(*args)`,
//! `kernel[grid, block]` and `kernel[grid, block](*args)` run here, in compiled code.
//!
//! A kernel holds its compiled launchers (one per device, installed by the general path
//! after a launch there), the kernels it tries before them on a plain call (its
//! variants: faster kernels of other modules for some calls) and after them (a generic
//! kernel's instances), and two hooks, passed in by its Python class: `general(kernel,
//! args, kwargs)`, the general path, for any call no launcher takes, and
//! `configure(kernel, config) -> configured` for `kernel[config]`, whose result is kept
//! per config when the config is made of ints alone.
//!
//! Hooks run Python code. When PyTorch has been imported, they are called through
//! `torch.compiler.disable` (made once per hook), so that a `torch.compile`d function
//! calling a kernel breaks its graph at the call instead of tracing pyoxide's launch
//! path; nothing is imported for that, and without PyTorch the hooks are called as they
//! are.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyTuple};
use pyo3::{PyTraverseError, PyVisit};

use crate::facts;
use crate::launcher::{Launcher, Outcome, parse_config};

/// Configurations kept per kernel (more: the cache starts over).
const MAX_CONFIGS: usize = 64;
/// The most ints a kept configuration holds (`((gx, gy, gz), (bx, by, bz), smem)` is 7).
const KEY_INTS: usize = 12;

/// A `kernel[config]` made of exact ints and tuples of exact ints, as plain data: kept
/// configurations are found by comparing these, without hashing a tuple or looking up a
/// dict (this lookup is most of what `kernel[grid, block](...)` costs over a plain call).
/// Exact ints only, as a key must equal only itself: `(1.0, 256) == (1, 256)` and
/// `True == 1` would reach another's entry.
#[derive(Clone, Copy, PartialEq, Eq)]
struct ConfigKey {
    /// The tuple's structure: a leading 1, then 4 bits per item, 0xF for an int or the
    /// length of a nested tuple.
    shape: u64,
    ints: [i64; KEY_INTS],
}

impl ConfigKey {
    /// The key of `config`, or None when it is not made of ints alone (or too big).
    fn of(config: &Bound<'_, PyAny>) -> Option<ConfigKey> {
        let items = config.cast_exact::<PyTuple>().ok()?;
        let mut ints = [0i64; KEY_INTS];
        let mut n = 0;
        let mut push = |x: &Bound<'_, PyAny>| -> Option<()> {
            if !x.is_exact_instance_of::<PyInt>() || n == KEY_INTS {
                return None;
            }
            ints[n] = x.extract::<i64>().ok()?;
            n += 1;
            Some(())
        };
        let mut shape = 1u64;
        for item in items.iter_borrowed() {
            if shape >> 60 != 0 {
                return None; // more items than the shape has room for
            }
            if let Ok(inner) = item.cast_exact::<PyTuple>() {
                let len = inner.len();
                if len >= 0xF {
                    return None;
                }
                for x in inner.iter_borrowed() {
                    push(&x)?;
                }
                shape = shape << 4 | len as u64;
            } else {
                push(&item)?;
                shape = shape << 4 | 0xF;
            }
        }
        Some(ConfigKey { shape, ints })
    }
}

/// A kernel's launch paths, replaced as a whole (calls read a snapshot, lock-free after
/// one clone of the Arc, so no lock is held while Python code runs).
#[derive(Default)]
struct Paths {
    launchers: Vec<Py<Launcher>>,
    variants: Vec<Py<KernelBase>>,
    instances: Vec<Py<KernelBase>>,
}

impl Paths {
    /// A copy holding the launchers `keep` accepts, and every variant and instance.
    fn keeping(&self, py: Python<'_>, keep: impl Fn(&Launcher) -> bool) -> Paths {
        let refs = |ks: &[Py<KernelBase>]| ks.iter().map(|k| k.clone_ref(py)).collect();
        Paths {
            launchers: self
                .launchers
                .iter()
                .filter(|l| keep(l.get()))
                .map(|l| l.clone_ref(py))
                .collect(),
            variants: refs(&self.variants),
            instances: refs(&self.instances),
        }
    }
}

/// A Python hook, and the same wrapped by `torch.compiler.disable` once needed.
#[derive(Default)]
struct Hook {
    plain: Option<Py<PyAny>>,
    opaque: Option<Py<PyAny>>,
}

impl Hook {
    fn set(&mut self, plain: Py<PyAny>) -> Hook {
        std::mem::replace(
            self,
            Hook {
                plain: Some(plain),
                opaque: None,
            },
        )
    }

    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        for h in [&self.plain, &self.opaque].into_iter().flatten() {
            visit.call(h)?;
        }
        Ok(())
    }
}

/// The hook to call: `hook`'s own function, or, when PyTorch has been imported, the
/// same through `torch.compiler.disable` (made once, kept in `hook`).
fn callable<'py>(py: Python<'py>, hook: &Mutex<Hook>) -> PyResult<Bound<'py, PyAny>> {
    let (plain, opaque) = {
        let hook = locked(hook);
        let Some(plain) = &hook.plain else {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "the hooks of this kernel object are not set",
            ));
        };
        (
            plain.clone_ref(py),
            hook.opaque.as_ref().map(|o| o.clone_ref(py)),
        )
    };
    let Some(torch) = loaded_torch(py) else {
        return Ok(plain.into_bound(py));
    };
    if let Some(opaque) = opaque {
        return Ok(opaque.into_bound(py));
    }
    let disable = torch
        .getattr(pyo3::intern!(py, "compiler"))
        .and_then(|c| c.getattr(pyo3::intern!(py, "disable")));
    let Ok(disable) = disable else {
        return Ok(plain.into_bound(py)); // a PyTorch without torch.compiler
    };
    let opaque = disable.call1((plain,))?;
    locked(hook).opaque = Some(opaque.clone().unbind());
    Ok(opaque)
}

/// PyTorch's module when it has been imported (never imported here).
fn loaded_torch(py: Python<'_>) -> Option<Bound<'_, PyModule>> {
    let modules = py
        .import(pyo3::intern!(py, "sys"))
        .ok()?
        .getattr(pyo3::intern!(py, "modules"))
        .ok()?;
    let torch = modules.get_item(pyo3::intern!(py, "torch")).ok()?;
    torch.cast_into::<PyModule>().ok()
}

#[pyclass(frozen, subclass, weakref, module = "pyoxide._launch._native")]
pub struct KernelBase {
    paths: Mutex<Arc<Paths>>,
    general: Mutex<Hook>,
    configure: Mutex<Hook>,
    /// `kernel[config]`'s results kept per configuration, the newest last.
    configs: Mutex<Vec<(ConfigKey, Py<PyAny>)>>,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl KernelBase {
    fn paths(&self) -> Arc<Paths> {
        locked(&self.paths).clone()
    }

    fn replace_paths(&self, update: impl FnOnce(&Paths, Python<'_>) -> Paths, py: Python<'_>) {
        let old = {
            let mut paths = locked(&self.paths);
            let new = Arc::new(update(&paths, py));
            std::mem::replace(&mut *paths, new)
        };
        drop(old); // outside the lock: dropping a launcher may run Python code
    }

    /// Try this kernel's own launchers.
    fn try_own(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        cfg: Option<[u32; 7]>,
    ) -> PyResult<Outcome> {
        for launcher in &self.paths().launchers {
            let outcome = launcher.get().launch(py, args, cfg)?;
            if outcome != Outcome::Declined {
                return Ok(outcome);
            }
        }
        Ok(Outcome::Declined)
    }

    /// A plain call: the variants' plain calls (a variant's own variants, a tuned
    /// variant's choices, before its launchers), the kernel's own launchers, the
    /// instances' plain calls (each instance's variants first).
    fn try_plain(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<Outcome> {
        let paths = self.paths();
        for kernel in &paths.variants {
            let outcome = kernel.get().try_plain(py, args)?;
            if outcome != Outcome::Declined {
                return Ok(outcome);
            }
        }
        for launcher in &paths.launchers {
            let outcome = launcher.get().launch(py, args, None)?;
            if outcome != Outcome::Declined {
                return Ok(outcome);
            }
        }
        for kernel in &paths.instances {
            let outcome = kernel.get().try_plain(py, args)?;
            if outcome != Outcome::Declined {
                return Ok(outcome);
            }
        }
        Ok(Outcome::Declined)
    }
}

#[pymethods]
impl KernelBase {
    /// Takes (and ignores) the subclass's constructor arguments: `__init__` sets it up.
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> KernelBase {
        KernelBase {
            paths: Mutex::new(Arc::new(Paths::default())),
            general: Mutex::new(Hook::default()),
            configure: Mutex::new(Hook::default()),
            configs: Mutex::new(Vec::new()),
        }
    }

    /// Set the general path, `general(kernel, args, kwargs)`, and `configure(kernel,
    /// config) -> configured`.
    fn set_hooks(&self, general: Py<PyAny>, configure: Py<PyAny>) {
        let old = (
            locked(&self.general).set(general),
            locked(&self.configure).set(configure),
        );
        drop(old); // outside the locks
    }

    /// Install `launcher`, replacing one for its device, and drop those of another knob
    /// generation.
    fn install(&self, py: Python<'_>, launcher: Py<Launcher>) {
        let device = launcher.get().device_id();
        self.replace_paths(
            |p, py| {
                let mut new = p.keeping(py, |l| l.is_current() && l.device_id() != device);
                new.launchers.push(launcher);
                new
            },
            py,
        );
    }

    /// Drop the launchers of another knob generation.
    fn prune(&self, py: Python<'_>) {
        if self.paths().launchers.iter().all(|l| l.get().is_current()) {
            return;
        }
        self.replace_paths(|p, py| p.keeping(py, Launcher::is_current), py);
    }

    /// The kernels a plain call tries before this one's launchers (its variants).
    fn set_variants(&self, py: Python<'_>, variants: Vec<Py<KernelBase>>) {
        self.replace_paths(
            |p, py| Paths {
                variants,
                ..p.keeping(py, |_| true)
            },
            py,
        );
    }

    /// The kernels a plain call tries after this one's launchers (a generic kernel's
    /// instances).
    fn set_instances(&self, py: Python<'_>, instances: Vec<Py<KernelBase>>) {
        self.replace_paths(
            |p, py| Paths {
                instances,
                ..p.keeping(py, |_| true)
            },
            py,
        );
    }

    /// The compiled launchers this kernel's own calls go to (one per device).
    #[getter]
    fn launchers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.paths().launchers.iter().map(|l| l.clone_ref(py)))
    }

    /// The variants a plain call tries first.
    #[getter]
    fn variants<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.paths().variants.iter().map(|k| k.clone_ref(py)))
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        // try_lock: locks are never held while Python runs, but a traversal must not
        // block in any case.
        if let Ok(paths) = self.paths.try_lock() {
            for l in &paths.launchers {
                visit.call(l)?;
            }
            for k in paths.variants.iter().chain(&paths.instances) {
                visit.call(k)?;
            }
        }
        for hook in [&self.general, &self.configure] {
            if let Ok(hook) = hook.try_lock() {
                hook.traverse(&visit)?;
            }
        }
        if let Ok(configs) = self.configs.try_lock() {
            for (_, c) in configs.iter() {
                visit.call(c)?;
            }
        }
        Ok(())
    }

    fn __clear__(&self) {
        let paths = std::mem::take(&mut *locked(&self.paths));
        let general = std::mem::take(&mut *locked(&self.general));
        let configure = std::mem::take(&mut *locked(&self.configure));
        let configs = std::mem::take(&mut *locked(&self.configs));
        drop((paths, general, configure, configs));
    }

    /// `kernel(*args)`: a launcher, else the general hook.
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        if kwargs.is_none_or(|k| k.is_empty())
            && facts::one_call(|| me.try_plain(py, args))? == Outcome::Launched
        {
            return Ok(());
        }
        callable(py, &me.general)?.call1((slf, args, kwargs))?;
        Ok(())
    }

    /// `kernel[config]`: the configured call kept for `config`, else the configure hook's
    /// (kept when the configuration is made of ints alone).
    fn __getitem__<'py>(
        slf: &Bound<'py, Self>,
        config: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let me = slf.get();
        let key = ConfigKey::of(config);
        if let Some(key) = &key {
            let configs = locked(&me.configs);
            if let Some((_, kept)) = configs.iter().rev().find(|(k, _)| k == key) {
                return Ok(kept.clone_ref(py).into_bound(py));
            }
        }
        let configured = callable(py, &me.configure)?.call1((slf, config))?;
        if let Some(key) = key {
            let dropped = {
                let mut configs = locked(&me.configs);
                let full = configs.len() >= MAX_CONFIGS;
                let dropped = if full {
                    std::mem::take(&mut *configs)
                } else {
                    Vec::new()
                };
                configs.push((key, configured.clone().unbind()));
                dropped
            };
            drop(dropped); // outside the lock: dropping a launcher may run Python code
        }
        Ok(configured)
    }
}

/// What a configured call needs besides the arguments, set by `_Configured.__init__`.
#[derive(Default)]
struct Configured {
    kernel: Option<Py<KernelBase>>,
    /// The configuration the fast path may use; None: every call takes the general path.
    checked: Option<[u32; 7]>,
}

#[pyclass(frozen, subclass, module = "pyoxide._launch._native")]
pub struct ConfiguredBase {
    state: Mutex<Configured>,
    general: Mutex<Hook>,
}

#[pymethods]
impl ConfiguredBase {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> ConfiguredBase {
        ConfiguredBase {
            state: Mutex::new(Configured::default()),
            general: Mutex::new(Hook::default()),
        }
    }

    /// Bind the configured call: its kernel, the configuration checked once
    /// (gx, gy, gz, bx, by, bz, shared_mem) or None, and the general path,
    /// `general(configured, args, kwargs)`.
    fn bind(
        &self,
        kernel: Py<KernelBase>,
        checked: Option<Bound<'_, PyAny>>,
        general: Py<PyAny>,
    ) -> PyResult<()> {
        let checked = match checked {
            None => None,
            Some(c) if c.is_none() => None,
            Some(c) => Some(parse_config(&c).ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(
                    "checked must be None or a 7-tuple of ints that fit u32",
                )
            })?),
        };
        let old = (
            std::mem::replace(
                &mut *locked(&self.state),
                Configured {
                    kernel: Some(kernel),
                    checked,
                },
            ),
            locked(&self.general).set(general),
        );
        drop(old);
        Ok(())
    }

    /// The configuration the fast path uses, or None.
    #[getter]
    fn checked<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        locked(&self.state)
            .checked
            .map(|c| PyTuple::new(py, c))
            .transpose()
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Ok(state) = self.state.try_lock()
            && let Some(k) = &state.kernel
        {
            visit.call(k)?;
        }
        if let Ok(hook) = self.general.try_lock() {
            hook.traverse(&visit)?;
        }
        Ok(())
    }

    fn __clear__(&self) {
        let state = std::mem::take(&mut *locked(&self.state));
        let general = std::mem::take(&mut *locked(&self.general));
        drop((state, general));
    }

    /// `kernel[grid, block](*args)`: the kernel's launchers with the checked
    /// configuration, else the general hook.
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let (kernel, checked) = {
            let state = locked(&me.state);
            (
                state.kernel.as_ref().map(|k| k.clone_ref(py)),
                state.checked,
            )
        };
        if kwargs.is_none_or(|k| k.is_empty())
            && let (Some(kernel), Some(cfg)) = (&kernel, checked)
            && facts::one_call(|| kernel.get().try_own(py, args, Some(cfg)))? == Outcome::Launched
        {
            return Ok(());
        }
        callable(py, &me.general)?.call1((slf, args, kwargs))?;
        Ok(())
    }
}
