//! A kernel's parameters: where each one sits in the PTX parameter buffer, which Python
//! values the fast path accepts for it, and how they are packed.
//!
//! The rules are a subset of pyoxide/_launch/args.py (the one statement of them), which the
//! general path applies: anything not certainly fine is declined (the caller returns
//! False), never refused. tests/launch/test_fast_path.py holds both to the same table.

use oxide_abi::ScalarType;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::facts::{LastArrays, MAX_RANK};
use crate::libraries::{Libraries, Library};
use crate::scalars::{self, Class, Scalars, u64_of};

const F32_MAX: f64 = 3.402_823_466_385_288_6e38;
/// Most shared dimension names the fast path handles (a kernel with more takes the
/// general path).
pub const MAX_NAMES: usize = 8;

/// The extra rules of an array that a tensor map describes (TMA's): its address a
/// multiple of `align` bytes, its rows (last extent) a multiple of `pitch` bytes, no
/// extent zero.
#[derive(Clone, Copy)]
pub struct Rule {
    align: u64,
    pitch: u64,
    nonzero: bool,
}

pub struct Memory {
    /// The element type's index in `ScalarType::ALL` (its dtype per library).
    ty: usize,
    pub itemsize: u64,
    mutable: bool,
    rule: Rule,
}

/// An integer type: its bytes and range (`lo < 0`: signed, read as an i64; else
/// unsigned, read as a u64).
#[derive(Clone, Copy)]
pub struct Int {
    bytes: usize,
    lo: i64,
    hi: u64,
}

impl Int {
    /// The bits of integer argument `a` (a Python or NumPy int, as `integer` reads it) at
    /// this width, when it is in range; else None (the general path says why).
    fn bits(self, a: &Bound<'_, PyAny>) -> Option<u64> {
        if self.lo < 0 {
            let v = a.extract::<i64>().ok()?;
            // A signed type's `hi` fits i64.
            (self.lo..=self.hi as i64).contains(&v).then_some(v as u64)
        } else {
            u64_of(a).filter(|&v| v <= self.hi)
        }
    }
}

pub enum Kind {
    /// A slice: packed as (u64 pointer, u64 length). `length` is its contract
    /// (`#[shapes(x[n])]`), coded as a shaped array's dims are.
    Array {
        memory: Memory,
        length: i64,
    },
    /// A shaped array (`Array2<T>` …): packed as pointer, extents, strides in elements.
    /// The fast path takes C-contiguous arrays only (any layout accepts them).
    Shaped {
        memory: Memory,
        dims: Vec<i64>,
    },
    /// A slice no caller passes, from the derived values (derived.rs).
    Derived,
    F32,
    F64,
    Bool,
    Int(Int),
    /// A record of `count` integers by value (`[u64; 3]`): one PTX parameter of that
    /// many bytes at the record's alignment (`.param .align A .b8 p[N]`), from a tuple or
    /// list of exactly `count` ints (pyoxide/_launch/records.py's lanes).
    Lanes {
        lane: Int,
        count: usize,
        align: usize,
    },
}

impl Kind {
    fn memory(&self) -> Option<&Memory> {
        match self {
            Kind::Array { memory, .. } | Kind::Shaped { memory, .. } => Some(memory),
            _ => None,
        }
    }
}

pub struct Param {
    pub kind: Kind,
    pub offset: usize,
}

/// What packing a call needs besides the arguments.
pub struct Context<'a> {
    /// The launcher's memory of the CuPy arrays of its last calls.
    pub last: &'a LastArrays,
    pub libraries: &'a Libraries,
    pub scalars: &'a Scalars,
    pub device: i64,
}

pub struct Layout {
    pub params: Vec<Param>,
    /// Parameters a caller passes (the derived ones follow them).
    pub passed: usize,
    /// Bytes in the parameter buffer.
    pub size: usize,
    /// Pairs of array parameters that may not overlap (one of them is mutable).
    exclusive: Vec<(usize, usize)>,
}

impl Layout {
    /// From the plan's `FastParam`s (plan.rs).
    pub fn new(description: &Bound<'_, PyAny>) -> PyResult<Layout> {
        let py = description.py();
        let mut params = Vec::new();
        let mut offset = 0usize;
        // `size` bytes at the next multiple of `align`.
        let mut place = |align: usize, size: usize| {
            offset = offset.next_multiple_of(align);
            let at = offset;
            offset += size;
            at
        };
        let mut passed = 0;
        for item in description.try_iter()? {
            let item = item?;
            let get = |name: &str| item.getattr(PyString::intern(py, name));
            let derived: bool = get("derived")?.extract()?;
            let kind = if derived {
                Kind::Derived
            } else {
                if params
                    .iter()
                    .any(|p: &Param| matches!(p.kind, Kind::Derived))
                {
                    return Err(PyValueError::new_err(
                        "derived parameters come after the passed ones",
                    ));
                }
                passed += 1;
                read_kind(&item)?
            };
            let offset = match kind {
                Kind::Array { .. } | Kind::Derived => place(8, 16),
                Kind::Shaped { ref dims, .. } => place(8, 8 * (1 + 2 * dims.len())),
                Kind::F32 => place(4, 4),
                Kind::F64 => place(8, 8),
                Kind::Bool => place(1, 1),
                Kind::Int(Int { bytes, .. }) => place(bytes, bytes),
                Kind::Lanes { lane, count, align } => place(align, lane.bytes * count),
            };
            params.push(Param { kind, offset });
        }
        let mut exclusive = Vec::new();
        for (i, p) in params.iter().enumerate() {
            for (j, q) in params.iter().enumerate().skip(i + 1) {
                if let (Some(m), Some(n)) = (p.kind.memory(), q.kind.memory())
                    && (m.mutable || n.mutable)
                {
                    exclusive.push((i, j));
                }
            }
        }
        Ok(Layout {
            params,
            passed,
            size: offset,
            exclusive,
        })
    }

    pub fn is_array(&self, i: usize) -> bool {
        matches!(
            self.params.get(i).map(|p| &p.kind),
            Some(Kind::Array { .. } | Kind::Shaped { .. })
        )
    }

    /// The rank of shaped parameter `i` (None for other kinds).
    pub fn shaped_rank(&self, i: usize) -> Option<usize> {
        match self.params.get(i).map(|p| &p.kind) {
            Some(Kind::Shaped { dims, .. }) => Some(dims.len()),
            _ => None,
        }
    }

    /// Whether parameter `i` is an integer scalar.
    pub fn is_integer(&self, i: usize) -> bool {
        matches!(self.params.get(i).map(|p| &p.kind), Some(Kind::Int(_)))
    }

    pub fn is_shaped(&self, i: usize) -> bool {
        matches!(
            self.params.get(i).map(|p| &p.kind),
            Some(Kind::Shaped { .. })
        )
    }

    /// Check `args` and pack them into `buf` (zeroed, `self.size` bytes), less the
    /// derived parameters; None to decline. Else the library of the array arguments
    /// (all of one), or None when there are none.
    pub fn pack<'c>(
        &self,
        cx: &'c Context<'_>,
        args: &Bound<'_, PyTuple>,
        buf: &mut [u8],
    ) -> Option<Option<&'c Library>> {
        if args.len() != self.passed {
            return None;
        }
        // Extents bound to the shared dimension names so far (a shape contract).
        let mut named = [u64::MAX; MAX_NAMES];
        let mut library: Option<&Library> = None;
        for (i, (p, a)) in self.params.iter().zip(args.iter_borrowed()).enumerate() {
            let ok = match &p.kind {
                Kind::Shaped { memory, dims } => {
                    let lib = cx.libraries.of(&a)?;
                    if library.is_some_and(|l| l.kind != lib.kind) {
                        return None; // a mix of libraries: the general path says why
                    }
                    library = Some(lib);
                    let (ptr, shape) = array(cx, lib, memory, i, &a, dims.len())?;
                    for (d, &n) in dims.iter().zip(&shape[..dims.len()]) {
                        if n > oxide_abi::shape::MAX_ARRAY_EXTENT || !bind(&mut named, *d, n) {
                            return None;
                        }
                    }
                    let rank = dims.len();
                    put(buf, p.offset, &ptr.to_ne_bytes());
                    let mut stride = 1u64;
                    for d in (0..rank).rev() {
                        let n = shape[d];
                        // As the general path: an extent of 0 or 1 passes stride 0.
                        let s = if n > 1 { stride } else { 0 };
                        put(buf, p.offset + 8 * (1 + d), &n.to_ne_bytes());
                        put(buf, p.offset + 8 * (1 + rank + d), &s.to_ne_bytes());
                        stride *= n;
                    }
                    true
                }
                Kind::Array { memory, length } => {
                    let lib = cx.libraries.of(&a)?;
                    if library.is_some_and(|l| l.kind != lib.kind) {
                        return None;
                    }
                    library = Some(lib);
                    let (ptr, shape) = array(cx, lib, memory, i, &a, 1)?;
                    if !bind(&mut named, *length, shape[0]) {
                        return None;
                    }
                    put(buf, p.offset, &ptr.to_ne_bytes());
                    put(buf, p.offset + 8, &shape[0].to_ne_bytes());
                    true
                }
                Kind::Derived => unreachable!("derived parameters are not passed"),
                Kind::F32 => float(cx, &a)
                    .filter(|f| (-F32_MAX..=F32_MAX).contains(f))
                    .map(|f| put(buf, p.offset, &(f as f32).to_ne_bytes()))
                    .is_some(),
                Kind::F64 => float(cx, &a)
                    .filter(|f| !f.is_nan())
                    .map(|f| put(buf, p.offset, &f.to_ne_bytes()))
                    .is_some(),
                Kind::Bool => match truth(cx, &a) {
                    Some(v) => {
                        buf[p.offset] = u8::from(v);
                        true
                    }
                    None => false,
                },
                Kind::Int(int) => integer(cx, &a)
                    .and_then(|i| int.bits(&i))
                    .map(|v| put_int(buf, p.offset, int.bytes, v))
                    .is_some(),
                Kind::Lanes { lane, count, .. } => lanes(cx, &a, *lane, *count, buf, p.offset),
            };
            if !ok {
                return None;
            }
        }
        // A mutable array may not overlap another array (Rust's exclusivity); the general
        // path explains any overlap.
        for &(i, j) in &self.exclusive {
            let (x, y) = (&self.params[i], &self.params[j]);
            let (Some(mx), Some(my)) = (x.kind.memory(), y.kind.memory()) else {
                continue;
            };
            let (px, nx) = (word(buf, x.offset), self.elements(buf, i));
            let (py_, ny) = (word(buf, y.offset), self.elements(buf, j));
            let overlap = nx != 0
                && ny != 0
                && u128::from(px) < u128::from(py_) + u128::from(ny) * u128::from(my.itemsize)
                && u128::from(py_) < u128::from(px) + u128::from(nx) * u128::from(mx.itemsize);
            if overlap {
                return None;
            }
        }
        Some(library)
    }

    /// The extents packed for parameter `i` (a shaped array; a slice's one length).
    pub fn shape_of(&self, buf: &[u8], i: usize) -> Vec<u64> {
        let p = &self.params[i];
        match &p.kind {
            Kind::Shaped { dims, .. } => (0..dims.len())
                .map(|d| word(buf, p.offset + 8 * (1 + d)))
                .collect(),
            Kind::Array { .. } => vec![word(buf, p.offset + 8)],
            _ => Vec::new(),
        }
    }

    /// The pointer packed for array parameter `i`.
    pub fn pointer_of(&self, buf: &[u8], i: usize) -> u64 {
        word(buf, self.params[i].offset)
    }

    /// The value packed for integer parameter `i` (None for other kinds).
    pub fn integer_of(&self, buf: &[u8], i: usize) -> Option<i128> {
        let p = self.params.get(i)?;
        let Kind::Int(Int { bytes, lo, .. }) = p.kind else {
            return None;
        };
        let signed = lo < 0;
        let raw = buf.get(p.offset..p.offset + bytes)?;
        Some(match (bytes, signed) {
            (1, true) => i8::from_ne_bytes(raw.try_into().ok()?).into(),
            (2, true) => i16::from_ne_bytes(raw.try_into().ok()?).into(),
            (4, true) => i32::from_ne_bytes(raw.try_into().ok()?).into(),
            (8, true) => i64::from_ne_bytes(raw.try_into().ok()?).into(),
            (1, false) => raw[0].into(),
            (2, false) => u16::from_ne_bytes(raw.try_into().ok()?).into(),
            (4, false) => u32::from_ne_bytes(raw.try_into().ok()?).into(),
            (8, false) => u64::from_ne_bytes(raw.try_into().ok()?).into(),
            _ => return None,
        })
    }

    /// Elements of array parameter `i` as packed (a shaped array's are C-contiguous).
    pub fn elements(&self, buf: &[u8], i: usize) -> u64 {
        self.shape_of(buf, i).iter().product()
    }
}

/// One parameter's kind, from its `FastParam`.
fn read_kind(item: &Bound<'_, PyAny>) -> PyResult<Kind> {
    let py = item.py();
    let get = |name: &str| item.getattr(PyString::intern(py, name));
    let ty: String = get("type")?.extract()?;
    let Some(t) = ScalarType::from_rust_name(&ty) else {
        return Err(PyValueError::new_err(format!("unknown scalar type {ty:?}")));
    };
    let lanes: Option<(usize, usize)> = get("lanes")?.extract()?;
    if let Some((count, align)) = lanes {
        return match scalar_kind(t).ok() {
            Some(Kind::Int(lane)) if count > 0 && align.is_power_of_two() => {
                Ok(Kind::Lanes { lane, count, align })
            }
            _ => Err(PyValueError::new_err(
                "lanes are a record of one or more integers at a power-of-two alignment",
            )),
        };
    }
    if !get("array")?.extract::<bool>()? {
        return scalar_kind(t);
    }
    let named = |d: i64| d >= -1 - MAX_NAMES as i64;
    let memory = Memory {
        ty: ScalarType::ALL
            .iter()
            .position(|&x| x == t)
            .expect("a type of the table"),
        itemsize: t.size() as u64,
        mutable: get("mutable")?.extract()?,
        rule: Rule {
            align: get("align")?.extract::<u64>()?.max(1),
            pitch: get("pitch")?.extract::<u64>()?.max(1),
            nonzero: get("nonzero")?.extract()?,
        },
    };
    let dims: Option<Vec<i64>> = get("dims")?.extract()?;
    let length: i64 = get("length")?.extract()?;
    match dims {
        Some(dims) => {
            if dims.is_empty() || dims.len() > MAX_RANK || !dims.iter().all(|&d| named(d)) {
                return Err(PyValueError::new_err(
                    "unsupported shaped array description",
                ));
            }
            Ok(Kind::Shaped { memory, dims })
        }
        None if !named(length) => Err(PyValueError::new_err(
            "unsupported slice length description",
        )),
        None => Ok(Kind::Array { memory, length }),
    }
}

/// A scalar parameter's kind, from oxide-abi's table (size, class, range).
fn scalar_kind(t: ScalarType) -> PyResult<Kind> {
    if matches!(t, ScalarType::F16 | ScalarType::Bf16) {
        // Rounding a Python float to a half is the general path's (pyoxide/_launch/half.py).
        return Err(PyValueError::new_err(format!(
            "{} scalars take the general path",
            t.rust_name()
        )));
    }
    let bytes = t.size();
    Ok(match (t, t.int_range()) {
        (ScalarType::F32, _) => Kind::F32,
        (ScalarType::F64, _) => Kind::F64,
        (ScalarType::Bool, _) => Kind::Bool,
        (_, Some((lo, hi))) => Kind::Int(Int {
            bytes,
            lo: lo as i64,
            hi: hi as u64,
        }),
        (_, None) => unreachable!("every non-float, non-bool scalar type has a range"),
    })
}

/// Whether extent `n` fits the contract's dimension `d` (-1 any, `>= 0` that extent,
/// `-2 - id` the shared name `id`, bound in `named` by its first extent).
fn bind(named: &mut [u64; MAX_NAMES], d: i64, n: u64) -> bool {
    match d {
        -1 => true,
        fixed if fixed >= 0 => n == fixed as u64,
        name => {
            let slot = &mut named[(-2 - name) as usize];
            if *slot == u64::MAX {
                *slot = n;
            }
            *slot == n
        }
    }
}

/// (the launch ABI's pointer, extents) of a C-contiguous array of `lib` of `memory`'s
/// element type and `rank` dimensions on the launcher's device, passed as parameter
/// `param`; None for anything the general path must look at.
fn array(
    cx: &Context<'_>,
    lib: &Library,
    memory: &Memory,
    param: usize,
    a: &Bound<'_, PyAny>,
    rank: usize,
) -> Option<(u64, [u64; MAX_RANK])> {
    let dtype = lib.dtype(memory.ty)?;
    let facts = lib.reader.facts(cx.last, param, a)?;
    if facts.dtype != dtype.as_ptr() as usize
        || facts.rank != rank
        || !facts.c_contiguous(memory.itemsize)
        || facts.device != cx.device
    {
        return None;
    }
    let ptr = span(memory, facts.ptr, &facts.shape[..rank], facts.elements)?;
    Some((ptr, facts.shape))
}

/// The launch ABI's pointer for an array of `elements` elements at `ptr` (for an empty
/// array the element size, never null: oxide-abi's `empty_array_address`), when it is
/// aligned, ends below 2**63 bytes and keeps the parameter's extra rules (else None).
fn span(memory: &Memory, ptr: u64, shape: &[u64], elements: u64) -> Option<u64> {
    let itemsize = memory.itemsize;
    let rule = memory.rule;
    if rule.nonzero && elements == 0 {
        return None;
    }
    if elements != 0 && (!ptr.is_multiple_of(itemsize) || !ptr.is_multiple_of(rule.align)) {
        return None;
    }
    if !(shape.last()? * itemsize).is_multiple_of(rule.pitch) {
        return None;
    }
    let bytes = elements.checked_mul(itemsize)?;
    if bytes > (1 << 63) - 1 {
        return None;
    }
    ptr.checked_add(bytes)?;
    Some(if elements == 0 {
        oxide_abi::types::empty_array_address(itemsize)
    } else {
        ptr
    })
}

/// A float argument's value: an exact `float`, or a NumPy float scalar (or 0-d array).
fn float(cx: &Context<'_>, a: &Bound<'_, PyAny>) -> Option<f64> {
    if let Ok(f) = a.cast_exact::<PyFloat>() {
        return Some(f.value());
    }
    match cx.scalars.numpy(a)? {
        (Class::Float, v) => scalars::as_f64(&v),
        _ => None, // an integer for a float: the general path checks it is exact
    }
}

/// An integer argument as a Python int: an exact `int` (not a bool), or a NumPy integer
/// scalar (or 0-d array).
fn integer<'py>(cx: &Context<'_>, a: &Bound<'py, PyAny>) -> Option<Bound<'py, PyAny>> {
    if a.is_exact_instance_of::<PyInt>() {
        return Some(a.clone());
    }
    match cx.scalars.numpy(a)? {
        (Class::Int, v) => scalars::as_int(&v),
        _ => None,
    }
}

/// Pack a record of `count` integers of `lane` at `at` from an exact tuple or list of
/// that many ints (Python's, or NumPy integer scalars); false to decline anything else
/// (an array, bytes, a nested list: the general path takes or refuses it).
fn lanes(
    cx: &Context<'_>,
    a: &Bound<'_, PyAny>,
    lane: Int,
    count: usize,
    buf: &mut [u8],
    at: usize,
) -> bool {
    let mut put_lane = |k: usize, x: &Bound<'_, PyAny>| {
        lane_integer(cx, x)
            .and_then(|i| lane.bits(&i))
            .map(|v| put_int(buf, at + k * lane.bytes, lane.bytes, v))
            .is_some()
    };
    if let Ok(t) = a.cast_exact::<PyTuple>() {
        t.len() == count && t.iter_borrowed().enumerate().all(|(k, x)| put_lane(k, &x))
    } else if let Ok(l) = a.cast_exact::<PyList>() {
        l.len() == count && l.iter().enumerate().all(|(k, x)| put_lane(k, &x))
    } else {
        false
    }
}

/// One lane of a record as a Python int: an exact `int`, or a NumPy integer scalar. A 0-d
/// array is declined: the general path reads a list's items as they are (records.py).
fn lane_integer<'py>(cx: &Context<'_>, a: &Bound<'py, PyAny>) -> Option<Bound<'py, PyAny>> {
    if a.is_exact_instance_of::<PyInt>() {
        return Some(a.clone());
    }
    match cx.scalars.numpy_scalar(a)? {
        (Class::Int, v) => scalars::as_int(&v),
        _ => None,
    }
}

/// A bool argument's value: `True`/`False`, or a NumPy bool (or 0-d bool array).
fn truth(cx: &Context<'_>, a: &Bound<'_, PyAny>) -> Option<bool> {
    if a.is_exact_instance_of::<PyBool>() {
        return Some(a.is(&*PyBool::new(a.py(), true)));
    }
    match cx.scalars.numpy(a)? {
        (Class::Bool, v) => v.is_truthy().ok(),
        _ => None,
    }
}

pub fn put(buf: &mut [u8], offset: usize, bytes: &[u8]) {
    buf[offset..offset + bytes.len()].copy_from_slice(bytes);
}

fn put_int(buf: &mut [u8], offset: usize, bytes: usize, v: u64) {
    match bytes {
        1 => put(buf, offset, &(v as u8).to_ne_bytes()),
        2 => put(buf, offset, &(v as u16).to_ne_bytes()),
        4 => put(buf, offset, &(v as u32).to_ne_bytes()),
        _ => put(buf, offset, &v.to_ne_bytes()),
    }
}

fn word(buf: &[u8], offset: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&buf[offset..offset + 8]);
    u64::from_ne_bytes(w)
}
