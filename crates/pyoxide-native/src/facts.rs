//! What the fast path reads from an array ([`Reader`], one per array library), and the
//! CuPy arrays it remembers.
//!
//! Reading a CuPy array takes six attribute reads (`dtype`, `shape`, `strides`, `data`,
//! `data.device_id`, `data.ptr`); `shape` and `strides` build a tuple each (through a
//! list, in CuPy's Cython), and with three arrays these reads are most of a launch's host
//! cost. CuPy fixes an array's dtype, memory (pointer and device) and size when it makes
//! it: those attributes are read-only. Only `shape` can be set, and only to a reshape
//! without a copy: the same elements in the same order, from the same first element. So
//! while the same array object lives:
//! - at rank 1, `ndim == 1` means the same extent (its size) and the same stride (the
//!   step from the first element to the second, which such a reshape keeps);
//! - at a higher rank, the same `shape` means the same strides (but those of extents of
//!   1, which no check reads).
//!
//! A launcher's [`LastArrays`] remembers, for each of its parameters, what was read from
//! the array last passed there, known by a weak reference (a remembered array is never
//! kept alive, and a dead one is never confused with a new object at its address). An
//! array is remembered the second time its address comes by in that place, so calls with
//! new arrays each time make few weak references. PyTorch can change a tensor's extents
//! and memory in place (`resize_`, `set_`): tensors are read on every call.
//!
//! One plain call may try many launchers: a tuned kernel's choices, each declining a
//! shape outside its bucket, then the hand pick. Each would read the same arrays again
//! (a tensor's six reads, about 0.4 µs, or a CuPy array's remembered shape), three
//! arrays times nine launchers being most of a tuned GEMM's host cost from PyTorch. So
//! while a call runs ([`one_call`]), what was read from an array object is kept for the
//! launchers after the first: the call's argument tuple holds the arrays, so no address
//! is reused before the call ends, and no Python code but the arrays' own attribute
//! reads runs in between.

use std::cell::RefCell;
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple, PyWeakrefMethods, PyWeakrefReference};

use crate::scalars::u64_of;

/// Highest rank (oxide-abi's `MAX_ARRAY_RANK`) the fast path reads.
pub const MAX_RANK: usize = oxide_abi::shape::MAX_ARRAY_RANK;

/// An array's element type, extents, strides, memory and device, as read.
#[derive(Clone, Copy)]
pub struct ArrayFacts {
    /// The address of its dtype object (the library's dtype objects are compared by
    /// identity; the array keeps its own alive).
    pub dtype: usize,
    pub rank: usize,
    pub shape: [u64; MAX_RANK],
    /// In bytes; None: known to be C-contiguous.
    strides: Option<[i64; MAX_RANK]>,
    pub elements: u64,
    pub ptr: u64,
    pub device: i64,
}

impl ArrayFacts {
    /// Whether the strides are a C-contiguous array's for elements of `itemsize` bytes,
    /// extents of 1 (or 0) aside, as pyoxide/_launch/arrays.py's `is_c_contiguous`.
    pub fn c_contiguous(&self, itemsize: u64) -> bool {
        let Some(strides) = &self.strides else {
            return true;
        };
        let mut expected = itemsize;
        for d in (0..self.rank).rev() {
            let n = self.shape[d];
            if n > 1 && u64::try_from(strides[d]).ok() != Some(expected) {
                return false;
            }
            expected = expected.saturating_mul(n);
        }
        true
    }

    /// The facts of a C-contiguous array of `shape` (a contiguous tensor, or a CuPy
    /// array before its strides are read); None when an extent is not an int or the rank
    /// is above [`MAX_RANK`].
    pub fn contiguous(
        dtype: usize,
        shape: &Bound<'_, PyTuple>,
        ptr: u64,
        device: i64,
    ) -> Option<ArrayFacts> {
        let mut facts = ArrayFacts {
            dtype,
            rank: shape.len(),
            shape: [0; MAX_RANK],
            strides: None,
            elements: 1,
            ptr,
            device,
        };
        if facts.rank > MAX_RANK {
            return None;
        }
        for (d, n) in shape.iter_borrowed().enumerate() {
            facts.shape[d] = u64_of(&n)?;
            facts.elements = facts.elements.checked_mul(facts.shape[d])?;
        }
        Some(facts)
    }
}

/// What a parameter remembers of the array last passed there.
enum Slot {
    /// The address of an array read afresh (0: none yet).
    Seen(usize),
    Known(Py<PyWeakrefReference>, ArrayFacts),
}

/// What one launcher remembers, a slot per parameter.
pub struct LastArrays {
    slots: Mutex<Vec<Slot>>,
}

impl LastArrays {
    pub fn new(params: usize) -> LastArrays {
        LastArrays {
            slots: Mutex::new((0..params).map(|_| Slot::Seen(0)).collect()),
        }
    }

    /// The facts of CuPy array `a` passed as parameter `param`: remembered, or read by
    /// `reader` (None: an attribute is missing or not as CuPy's are, or the rank is above
    /// [`MAX_RANK`]).
    pub fn facts(
        &self,
        param: usize,
        a: &Bound<'_, PyAny>,
        reader: &CupyReader,
    ) -> Option<ArrayFacts> {
        let address = a.as_ptr() as usize;
        // No Python code runs under the lock: the attributes are read after it.
        let (known, seen) = match self.lock().get(param)? {
            Slot::Known(array, facts) => {
                let alive = array.bind(a.py()).upgrade();
                (alive.is_some_and(|o| o.is(a)).then_some(*facts), false)
            }
            Slot::Seen(seen) => (None, *seen == address),
        };
        if let Some(facts) = known
            && reader.unchanged(a, &facts)
        {
            return Some(facts);
        }
        let facts = reader.read(a)?;
        // The same object (reshaped), or one whose address came by before, is remembered
        // (a weak reference to an object that has one is that one again).
        let slot = match (known.is_some() || seen).then(|| PyWeakrefReference::new(a)) {
            Some(Ok(array)) => Slot::Known(array.unbind(), facts),
            _ => Slot::Seen(address), // first sight, or a type without weak references
        };
        let old = std::mem::replace(&mut self.lock()[param], slot);
        drop(old); // after the lock
        Some(facts)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// How one array library's arrays are read.
pub enum Reader {
    Cupy(CupyReader),
    Torch(TensorReader),
}

impl Reader {
    pub fn cupy(py: Python<'_>) -> Reader {
        Reader::Cupy(CupyReader::new(py))
    }

    pub fn torch(py: Python<'_>) -> Reader {
        Reader::Torch(TensorReader::new(py))
    }

    /// The facts of array `a` passed as parameter `param` of a launcher remembering
    /// `last` (None: it is not an array the fast path reads, or one the general path
    /// must look at). Within [`one_call`], an array is read once.
    pub fn facts(
        &self,
        last: &LastArrays,
        param: usize,
        a: &Bound<'_, PyAny>,
    ) -> Option<ArrayFacts> {
        let address = a.as_ptr() as usize;
        if let Some(known) = CALL.with_borrow(|call| call.get(address)) {
            return known;
        }
        let facts = match self {
            Reader::Cupy(reader) => last.facts(param, a, reader),
            Reader::Torch(reader) => reader.read(a),
        };
        CALL.with_borrow_mut(|call| call.keep(address, facts));
        facts
    }
}

/// What the plain call in progress on this thread has read, by array address.
struct CallArrays {
    /// Calls open (a call made from an array's attribute read nests).
    open: usize,
    read: Vec<(usize, Option<ArrayFacts>)>,
}

impl CallArrays {
    fn get(&self, address: usize) -> Option<Option<ArrayFacts>> {
        self.read
            .iter()
            .find(|(at, _)| *at == address)
            .map(|(_, facts)| *facts)
    }

    fn keep(&mut self, address: usize, facts: Option<ArrayFacts>) {
        if self.open > 0 {
            self.read.push((address, facts));
        }
    }
}

thread_local! {
    static CALL: RefCell<CallArrays> = const {
        RefCell::new(CallArrays { open: 0, read: Vec::new() })
    };
}

/// Closes a call's reads: what it read is forgotten, a nested call's when it ends.
struct CallGuard {
    mark: usize,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        CALL.with_borrow_mut(|call| {
            call.open -= 1;
            call.read.truncate(self.mark);
        });
    }
}

/// Run `f`, one call of a kernel on its arguments: each array object is read once in it,
/// however many launchers try the call.
pub fn one_call<R>(f: impl FnOnce() -> R) -> R {
    let mark = CALL.with_borrow_mut(|call| {
        call.open += 1;
        call.read.len()
    });
    let _guard = CallGuard { mark };
    f()
}

/// The attribute names a CuPy array is read by, interned once.
struct Names {
    dtype: Py<PyString>,
    ndim: Py<PyString>,
    shape: Py<PyString>,
    strides: Py<PyString>,
    data: Py<PyString>,
    device_id: Py<PyString>,
    ptr: Py<PyString>,
}

/// Reads a `cupy.ndarray`'s facts, and checks remembered ones.
pub struct CupyReader {
    names: Names,
}

impl CupyReader {
    fn new(py: Python<'_>) -> CupyReader {
        let n = |s: &str| PyString::intern(py, s).unbind();
        CupyReader {
            names: Names {
                dtype: n("dtype"),
                ndim: n("ndim"),
                shape: n("shape"),
                strides: n("strides"),
                data: n("data"),
                device_id: n("device_id"),
                ptr: n("ptr"),
            },
        }
    }

    /// Whether remembered `facts` still hold for `a` (the same object): its rank, or at
    /// a rank above 1 its shape, unchanged (false when the attribute cannot be read: the
    /// array is read afresh).
    fn unchanged(&self, a: &Bound<'_, PyAny>, facts: &ArrayFacts) -> bool {
        let py = a.py();
        if facts.rank == 1 {
            let ndim = a.getattr(self.names.ndim.bind(py));
            return ndim.is_ok_and(|n| u64_of(&n) == Some(1));
        }
        let Ok(shape) = a.getattr(self.names.shape.bind(py)) else {
            return false;
        };
        shape.cast::<PyTuple>().is_ok_and(|shape| {
            shape.len() == facts.rank
                && shape
                    .iter_borrowed()
                    .zip(&facts.shape)
                    .all(|(n, &known)| u64_of(&n) == Some(known))
        })
    }

    /// Read `a`'s facts from its attributes.
    fn read(&self, a: &Bound<'_, PyAny>) -> Option<ArrayFacts> {
        let py = a.py();
        let names = &self.names;
        let dtype = a.getattr(names.dtype.bind(py)).ok()?.as_ptr() as usize;
        let shape = a.getattr(names.shape.bind(py)).ok()?;
        let strides = a.getattr(names.strides.bind(py)).ok()?;
        let data = a.getattr(names.data.bind(py)).ok()?;
        let device = device_of(data.getattr(names.device_id.bind(py)))?;
        let ptr = u64_of(&data.getattr(names.ptr.bind(py)).ok()?)?;
        let mut facts = ArrayFacts::contiguous(dtype, shape.cast::<PyTuple>().ok()?, ptr, device)?;
        let strides = strides.cast::<PyTuple>().ok()?;
        if strides.len() != facts.rank {
            return None;
        }
        let mut bytes = [0i64; MAX_RANK];
        for (b, s) in bytes.iter_mut().zip(strides.iter_borrowed()) {
            *b = s.extract().ok()?;
        }
        facts.strides = Some(bytes);
        Some(facts)
    }
}

/// Reads a `torch.Tensor`'s facts: `dtype`, `shape`, `requires_grad`, `is_contiguous()`,
/// `get_device()`, `data_ptr()`.
pub struct TensorReader {
    dtype: Py<PyString>,
    shape: Py<PyString>,
    requires_grad: Py<PyString>,
    is_contiguous: Py<PyString>,
    get_device: Py<PyString>,
    data_ptr: Py<PyString>,
}

impl TensorReader {
    fn new(py: Python<'_>) -> TensorReader {
        let n = |s: &str| PyString::intern(py, s).unbind();
        TensorReader {
            dtype: n("dtype"),
            shape: n("shape"),
            requires_grad: n("requires_grad"),
            is_contiguous: n("is_contiguous"),
            get_device: n("get_device"),
            data_ptr: n("data_ptr"),
        }
    }

    /// The facts of a tensor that needs no gradient and is contiguous (its strides are
    /// then a C-contiguous array's, which is all the facts say of them); None for any
    /// other.
    fn read(&self, a: &Bound<'_, PyAny>) -> Option<ArrayFacts> {
        let py = a.py();
        let dtype = a.getattr(self.dtype.bind(py)).ok()?.as_ptr() as usize;
        let shape_obj = a.getattr(self.shape.bind(py)).ok()?;
        let shape = shape_obj.cast::<PyTuple>().ok()?; // torch.Size is a tuple
        if a.getattr(self.requires_grad.bind(py))
            .ok()?
            .is_truthy()
            .ok()?
            || !a
                .call_method0(self.is_contiguous.bind(py))
                .ok()?
                .is_truthy()
                .ok()?
        {
            return None; // the general path refuses a tensor that requires grad
        }
        let device = device_of(a.call_method0(self.get_device.bind(py)))?;
        let ptr = u64_of(&a.call_method0(self.data_ptr.bind(py)).ok()?)?;
        ArrayFacts::contiguous(dtype, shape, ptr, device)
    }
}

/// The device an attribute read or method call returned (None: it raised, or it is not
/// an int).
fn device_of(got: PyResult<Bound<'_, PyAny>>) -> Option<i64> {
    got.ok()?.extract().ok()
}
