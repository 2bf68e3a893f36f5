//! The value types and parameter kinds a kernel signature can use, and how each is
//! passed at the launch ABI (the PTX `.param` list and the emulator's packed args).

/// Element or scalar type of a kernel parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum ScalarType {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
    /// IEEE binary16 (`oxide_device::f16`): NumPy's, CuPy's and PyTorch's `float16`.
    F16,
    /// bfloat16 (`oxide_device::bf16`): PyTorch's `bfloat16`, `ml_dtypes.bfloat16`
    /// (JAX's, and CuPy's when ml_dtypes is installed).
    Bf16,
    /// Passed as one byte (0 or 1): PTX has no boolean parameter type.
    Bool,
    /// 64-bit on the only device target (nvptx64) and on the emulator's hosts.
    Usize,
    Isize,
}

impl ScalarType {
    pub const ALL: [ScalarType; 15] = [
        ScalarType::I8,
        ScalarType::I16,
        ScalarType::I32,
        ScalarType::I64,
        ScalarType::U8,
        ScalarType::U16,
        ScalarType::U32,
        ScalarType::U64,
        ScalarType::F32,
        ScalarType::F64,
        ScalarType::F16,
        ScalarType::Bf16,
        ScalarType::Bool,
        ScalarType::Usize,
        ScalarType::Isize,
    ];

    /// The Rust spelling, which is also the manifest spelling.
    pub const fn rust_name(self) -> &'static str {
        match self {
            ScalarType::I8 => "i8",
            ScalarType::I16 => "i16",
            ScalarType::I32 => "i32",
            ScalarType::I64 => "i64",
            ScalarType::U8 => "u8",
            ScalarType::U16 => "u16",
            ScalarType::U32 => "u32",
            ScalarType::U64 => "u64",
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
            ScalarType::F16 => "f16",
            ScalarType::Bf16 => "bf16",
            ScalarType::Bool => "bool",
            ScalarType::Usize => "usize",
            ScalarType::Isize => "isize",
        }
    }

    /// What kind of number it is: `'i'` signed, `'u'` unsigned, `'f'` float, `'b'` bool
    /// (NumPy's dtype kind letters).
    pub const fn class(self) -> char {
        match self {
            ScalarType::I8
            | ScalarType::I16
            | ScalarType::I32
            | ScalarType::I64
            | ScalarType::Isize => 'i',
            ScalarType::U8
            | ScalarType::U16
            | ScalarType::U32
            | ScalarType::U64
            | ScalarType::Usize => 'u',
            ScalarType::F32 | ScalarType::F64 | ScalarType::F16 | ScalarType::Bf16 => 'f',
            ScalarType::Bool => 'b',
        }
    }

    /// The NumPy array-interface `typestr` an array of this element type has, as
    /// pyoxide normalizes it (little-endian, like the GPU; `|` for one byte). bfloat16
    /// has no typestr of its own (ml_dtypes' arrays say `<V2`, opaque bytes): pyoxide
    /// spells it `<E2`, after the type's NumPy character code, and gives that spelling
    /// to an array whose dtype is named `bfloat16`.
    pub const fn typestr(self) -> &'static str {
        match self {
            ScalarType::I8 => "|i1",
            ScalarType::I16 => "<i2",
            ScalarType::I32 => "<i4",
            ScalarType::I64 | ScalarType::Isize => "<i8",
            ScalarType::U8 => "|u1",
            ScalarType::U16 => "<u2",
            ScalarType::U32 => "<u4",
            ScalarType::U64 | ScalarType::Usize => "<u8",
            ScalarType::F32 => "<f4",
            ScalarType::F64 => "<f8",
            ScalarType::F16 => "<f2",
            ScalarType::Bf16 => "<E2",
            ScalarType::Bool => "|b1",
        }
    }

    /// The smallest and largest value of an integer type (None for floats and bool).
    pub const fn int_range(self) -> Option<(i128, i128)> {
        let bits = 8 * self.size() as u32;
        match self.class() {
            'i' => Some((-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)),
            'u' => Some((0, (1i128 << bits) - 1)),
            _ => None,
        }
    }

    pub fn from_rust_name(name: &str) -> Option<ScalarType> {
        ScalarType::ALL.into_iter().find(|t| t.rust_name() == name)
    }

    /// An integer type (not a float, not `bool`).
    pub const fn is_integer(self) -> bool {
        !matches!(self.class(), 'f' | 'b')
    }

    /// Size in bytes at the launch ABI.
    pub const fn size(self) -> usize {
        match self {
            ScalarType::I8 | ScalarType::U8 | ScalarType::Bool => 1,
            ScalarType::I16 | ScalarType::U16 | ScalarType::F16 | ScalarType::Bf16 => 2,
            ScalarType::I32 | ScalarType::U32 | ScalarType::F32 => 4,
            ScalarType::I64
            | ScalarType::U64
            | ScalarType::F64
            | ScalarType::Usize
            | ScalarType::Isize => 8,
        }
    }
}

/// The address a launcher passes for an array parameter with no elements: the element
/// size in bytes. Every array kind's pointer (slices, shaped arrays, atomic slices) is
/// non-null and aligned to the element, also for an empty array, whose own data pointer
/// may be null (CuPy's and PyTorch's are); the device rebuilds `&[T]` from it as is,
/// with no test of the length (`oxide_device::__private`). The general path's copy is
/// `pyoxide/_launch/args.py`'s `abi_pointer`.
pub const fn empty_array_address(itemsize: u64) -> u64 {
    itemsize
}

/// How a parameter is declared in Rust, which fixes how it is passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum ParamKind {
    /// A scalar by value. ABI: the value.
    Scalar,
    /// `&[T]`, read-only. ABI: pointer, then length (u64).
    Slice,
    /// `DisjointSlice<T>`: each thread writes only its own element. ABI: pointer, length.
    DisjointSlice,
    /// `&mut [T]`, only in `unsafe` kernels (not race-safe). ABI: pointer, length.
    MutSlice,
    /// `*const T` / `*mut T`, only in `unsafe` kernels. ABI: pointer.
    Pointer,
    /// `AtomicSlice<T>` (T one of u32, i32, u64, i64, f32, f64): every thread may update
    /// any element, through device-scope atomics only (histograms, accumulators). A
    /// mutable array on the Python side. ABI: pointer, length.
    AtomicSlice,
    /// `Array1<T>` … `Array3<T>` (`Array<T, R, L>`): a read-only shaped array of rank R
    /// (see [`crate::shape`]). ABI: pointer, R extents, R strides in elements.
    Array,
    /// `DisjointArray1<T>` … `DisjointArray3<T>`: a shaped output each thread writes
    /// only at its own element (2-D witness) or its block's row. ABI as [`ParamKind::Array`].
    DisjointArray,
    /// A `Copy` value that is not a scalar, by value: a struct, enum, union, tuple,
    /// array `[T; N]` or `Uniform<T>` (cuda-oxide's kernels take these). Its size and
    /// alignment are in the parameter's `record`. ABI: one PTX parameter of that many
    /// bytes (`.param .align A .b8 p[S]`); on the emulator one word, the address of
    /// the bytes.
    Value,
}

impl ParamKind {
    pub const ALL: [ParamKind; 9] = [
        ParamKind::Scalar,
        ParamKind::Slice,
        ParamKind::DisjointSlice,
        ParamKind::MutSlice,
        ParamKind::Pointer,
        ParamKind::AtomicSlice,
        ParamKind::Array,
        ParamKind::DisjointArray,
        ParamKind::Value,
    ];

    /// The manifest spelling.
    pub const fn name(self) -> &'static str {
        match self {
            ParamKind::Scalar => "scalar",
            ParamKind::Slice => "slice",
            ParamKind::DisjointSlice => "disjoint_slice",
            ParamKind::MutSlice => "mut_slice",
            ParamKind::Pointer => "pointer",
            ParamKind::AtomicSlice => "atomic_slice",
            ParamKind::Array => "array",
            ParamKind::DisjointArray => "disjoint_array",
            ParamKind::Value => "value",
        }
    }

    /// How the parameter is written in Rust: `{t}` stands for the element type,
    /// `{mut}` for `mut` or `const`, `{r}` for a shaped array's rank and `{l}` for its
    /// layout argument (empty for C order, `, Strided` otherwise).
    pub const fn rust_template(self) -> &'static str {
        match self {
            ParamKind::Scalar => "{t}",
            ParamKind::Slice => "&[{t}]",
            ParamKind::DisjointSlice => "DisjointSlice<{t}>",
            ParamKind::MutSlice => "&mut [{t}]",
            ParamKind::Pointer => "*{mut} {t}",
            ParamKind::AtomicSlice => "AtomicSlice<{t}>",
            ParamKind::Array => "Array{r}<{t}{l}>",
            ParamKind::DisjointArray => "DisjointArray{r}<{t}{l}>",
            ParamKind::Value => "{t}",
        }
    }

    /// The words it is passed as, for people (`pyoxide inspect`).
    pub const fn abi_text(self) -> &'static str {
        match self {
            ParamKind::Scalar => "value",
            ParamKind::Pointer => "pointer",
            ParamKind::Array | ParamKind::DisjointArray => {
                "pointer, extents (u64 per dimension), strides in elements (u64 per dimension)"
            }
            ParamKind::Value => "its bytes (emulator: their address)",
            _ => "pointer, length (u64)",
        }
    }

    /// Passed as (pointer, length) and given as a 1-D contiguous array.
    pub const fn is_slice(self) -> bool {
        self.abi_words() == 2
    }

    /// Whether the kernel may write through it whatever the declaration says (slices
    /// that are mutable by kind; a pointer's mutability is its own).
    pub const fn always_mutable(self) -> bool {
        matches!(
            self,
            ParamKind::DisjointSlice
                | ParamKind::MutSlice
                | ParamKind::AtomicSlice
                | ParamKind::DisjointArray
        )
    }

    /// A shaped array (pointer, extents, strides; its rank is in the descriptor).
    pub const fn is_shaped(self) -> bool {
        matches!(self, ParamKind::Array | ParamKind::DisjointArray)
    }

    /// Whether its length is the amount of work: one thread per element sizes an
    /// automatic grid. An `AtomicSlice` (a histogram's bins) does not.
    pub const fn sizes_grid(self) -> bool {
        matches!(
            self,
            ParamKind::DisjointSlice | ParamKind::MutSlice | ParamKind::DisjointArray
        )
    }

    /// Number of 8-byte-or-smaller words the parameter occupies at the launch ABI; for
    /// a shaped array, the words besides its `2 · rank` extents and strides.
    pub const fn abi_words(self) -> usize {
        match self {
            ParamKind::Scalar
            | ParamKind::Pointer
            | ParamKind::Value
            | ParamKind::Array
            | ParamKind::DisjointArray => 1,
            ParamKind::Slice
            | ParamKind::DisjointSlice
            | ParamKind::MutSlice
            | ParamKind::AtomicSlice => 2,
        }
    }

    /// Whether the parameter refers to memory (an array argument on the Python side).
    pub const fn is_array(self) -> bool {
        !matches!(self, ParamKind::Scalar | ParamKind::Value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in ScalarType::ALL {
            assert_eq!(ScalarType::from_rust_name(t.rust_name()), Some(t));
        }
        assert_eq!(ScalarType::from_rust_name("f128"), None);
    }

    #[test]
    fn typestrs_agree_with_kind_and_size() {
        for t in ScalarType::ALL {
            let s = t.typestr();
            assert_eq!(s[2..].parse::<usize>(), Ok(t.size()), "{s}");
            assert_eq!(&s[..1], if t.size() == 1 { "|" } else { "<" }, "{s}");
            if t != ScalarType::Bf16 {
                assert_eq!(s.chars().nth(1), Some(t.class()), "{s}");
            }
        }
    }

    #[test]
    fn slices_take_two_words() {
        assert_eq!(ParamKind::Slice.abi_words(), 2);
        assert_eq!(ParamKind::Scalar.abi_words(), 1);
        assert!(ParamKind::DisjointSlice.is_array());
        assert_eq!(ParamKind::AtomicSlice.abi_words(), 2);
        assert!(ParamKind::AtomicSlice.is_array());
    }
}
