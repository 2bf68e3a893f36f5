//! The environment variables that change which path a launch takes (`PYOXIDE_SYNC`,
//! `PYOXIDE_BACKEND`, read by pyoxide/_knobs.py). A launcher remembers their values when
//! it is built and declines every call once either differs, so the general path sees the
//! change, drops the launcher and applies the new setting.
//!
//! Read with the C library's `getenv`, which is what `os.environ[...] = v` updates (through
//! `setenv`), without allocating; the GIL, held here and by every `os.environ` write,
//! keeps the two from racing.

use std::ffi::{CStr, c_char};

unsafe extern "C" {
    fn getenv(name: *const c_char) -> *const c_char;
}

const NAMES: [&CStr; 2] = [c"PYOXIDE_SYNC", c"PYOXIDE_BACKEND"];

pub struct Snapshot([Option<Vec<u8>>; 2]);

fn read(name: &CStr) -> Option<&'static [u8]> {
    // SAFETY: a NUL-terminated name; the result, when not null, is a NUL-terminated string
    // that stays valid until the variable is set again, which needs the GIL we hold.
    unsafe {
        let p = getenv(name.as_ptr());
        (!p.is_null()).then(|| CStr::from_ptr(p).to_bytes())
    }
}

impl Snapshot {
    pub fn now() -> Snapshot {
        Snapshot(NAMES.map(|n| read(n).map(<[u8]>::to_vec)))
    }

    /// Whether both variables still have the values they had when taken.
    pub fn current(&self) -> bool {
        self.0
            .iter()
            .zip(NAMES)
            .all(|(was, name)| was.as_deref() == read(name))
    }
}
