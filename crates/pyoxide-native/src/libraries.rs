//! The array libraries the fast path reads: CuPy's `ndarray` and PyTorch's `Tensor`,
//! each bound the first time an argument of its exact type arrives.
//!
//! The binding comes from a Python hook (pyoxide/backends/cupy/_native.py's
//! `bind_array_type`), given the type: the library's kind, its dtype object per Rust
//! element type, and how to read its current stream. Nothing is imported here: a type
//! the hook does not know (any other array, or PyTorch's before `import torch`) is
//! remembered as refused, and calls with it take the general path.

use std::sync::{Mutex, OnceLock};

use oxide_abi::ScalarType;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyType};

use crate::facts::Reader;
use crate::stream::CurrentStream;

/// At most this many libraries are bound (two are known).
const MAX_LIBRARIES: usize = 4;
/// Refused types remembered (more: the hook is asked again, on the general path's way).
const MAX_REFUSED: usize = 16;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `cupy.ndarray`, read by facts.rs's `CupyReader` and remembered while it keeps its
    /// shape; CuPy's current stream.
    Cupy,
    /// `torch.Tensor`, read by facts.rs's `TensorReader` on every call; PyTorch's
    /// current stream on the tensor's device.
    Torch,
}

enum Stream {
    /// CuPy's current stream (its C function, or the Python call).
    Current(CurrentStream),
    /// `f(device) -> int`: PyTorch's `torch._C._cuda_getCurrentRawStream`.
    PerDevice(Py<PyAny>),
}

pub struct Library {
    pub kind: Kind,
    ty: Py<PyType>,
    /// The dtype object of each Rust element type, in `ScalarType::ALL`'s order.
    dtypes: Vec<Option<Py<PyAny>>>,
    stream: Stream,
    /// How its arrays are read (and whether they are remembered).
    pub reader: Reader,
}

impl Library {
    /// From the hook's binding `(kind, type, dtypes, stream, stream_capsule)`.
    fn from_binding(binding: &Bound<'_, PyAny>) -> PyResult<Library> {
        let (kind, ty, dtypes, stream, capsule): Binding<'_> = binding.extract()?;
        let dtypes = ScalarType::ALL
            .iter()
            .map(|t| Ok(dtypes.get_item(t.rust_name())?.map(Bound::unbind)))
            .collect::<PyResult<Vec<_>>>()?;
        let py = binding.py();
        let (kind, stream, reader) = match kind.as_str() {
            "cupy" => (
                Kind::Cupy,
                Stream::Current(CurrentStream::new(stream, capsule)?),
                Reader::cupy(py),
            ),
            "torch" => (
                Kind::Torch,
                Stream::PerDevice(stream.unbind()),
                Reader::torch(py),
            ),
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown array library kind {other:?} (cupy or torch)"
                )));
            }
        };
        Ok(Library {
            kind,
            ty: ty.unbind(),
            dtypes,
            stream,
            reader,
        })
    }

    /// The library's dtype object for element type `t` (None: it has none, e.g. CuPy's
    /// bfloat16 without ml_dtypes).
    pub fn dtype(&self, t: usize) -> Option<&Py<PyAny>> {
        self.dtypes.get(t).and_then(Option::as_ref)
    }

    /// The handle of the stream a launch on `device` goes to.
    pub fn stream(&self, py: Python<'_>, device: i64) -> PyResult<u64> {
        match &self.stream {
            Stream::Current(current) => current.get(py),
            Stream::PerDevice(f) => f.bind(py).call1((device,))?.extract::<u64>(),
        }
    }

    /// Whether CuPy's current stream comes from its C function.
    pub fn stream_from_capsule(&self) -> bool {
        matches!(&self.stream, Stream::Current(c) if c.is_function())
    }
}

/// `(kind, type, {rust type: dtype}, stream, stream capsule or None)`.
type Binding<'py> = (
    String,
    Bound<'py, PyType>,
    Bound<'py, PyDict>,
    Bound<'py, PyAny>,
    Option<Bound<'py, PyCapsule>>,
);

pub struct Libraries {
    bound: [OnceLock<Library>; MAX_LIBRARIES],
    refused: Mutex<Vec<usize>>,
    bind: Py<PyAny>,
}

impl Libraries {
    pub fn new(bind: Bound<'_, PyAny>) -> Libraries {
        Libraries {
            bound: Default::default(),
            refused: Mutex::new(Vec::new()),
            bind: bind.unbind(),
        }
    }

    /// The library of `obj`'s exact type, binding it on first sight; None: not an array
    /// the fast path reads (or the hook failed: the general path will say why).
    pub fn of(&self, obj: &Bound<'_, PyAny>) -> Option<&Library> {
        let ty = obj.get_type();
        let id = ty.as_ptr() as usize;
        for slot in &self.bound {
            match slot.get() {
                Some(lib) if lib.ty.as_ptr() as usize == id => return Some(lib),
                Some(_) => continue,
                None => break,
            }
        }
        self.bind_type(&ty, id).ok().flatten()
    }

    /// The first bound library (CuPy, bound when the runtime is made), for calls without
    /// array arguments, which run on CuPy's current stream.
    pub fn first(&self) -> Option<&Library> {
        self.bound[0].get()
    }

    /// Bind `ty` through the hook at once (the runtime binds its default type this way);
    /// the hook's error, or its binding's, when it has one.
    pub fn bind_now(&self, ty: &Bound<'_, PyType>) -> PyResult<Option<&Library>> {
        self.bind_type(ty, ty.as_ptr() as usize)
    }

    fn bind_type(&self, ty: &Bound<'_, PyType>, id: usize) -> PyResult<Option<&Library>> {
        let refused = || self.refused.lock().unwrap_or_else(|e| e.into_inner());
        if refused().contains(&id) {
            return Ok(None);
        }
        let binding = self.bind.bind(ty.py()).call1((ty,));
        let library = match binding {
            Ok(b) if b.is_none() => Ok(None),
            Ok(b) => Library::from_binding(&b).map(Some),
            Err(e) => Err(e),
        };
        let library = match library {
            Ok(Some(library)) => library,
            other => {
                let mut refused = refused();
                if refused.len() < MAX_REFUSED {
                    refused.push(id); // the type object stays alive: it has instances here
                }
                return other.map(|_| None);
            }
        };
        let mut library = Some(library);
        for slot in &self.bound {
            let lib = match slot.get() {
                Some(lib) => lib,
                None => slot.get_or_init(|| library.take().expect("placed once")),
            };
            if lib.ty.as_ptr() as usize == id {
                return Ok(Some(lib));
            }
        }
        Ok(None) // every slot holds another library
    }
}
