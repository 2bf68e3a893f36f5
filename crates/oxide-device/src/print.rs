//! `gpu_printf!` (CUDA's device `printf`, through `vprintf`) and `gpu_assert!`.
//!
//! `gpu_printf!("i = {}, x = {:.3}, bits {:x}\n", i, x, b)` takes Rust placeholders:
//! `{}`/`{:?}` (floats print as C's `%g`, `bool` as `true`/`false`), `{:x}`, `{:X}`,
//! `{:e}`, `{:.N}`; arguments are integers, floats, `bool` and `&CStr` (`c"…"`). The
//! macro turns the literal into a C format string at compile time (`vprintf` formats on
//! the host from the raw argument buffer).
//!
//! [`gpu_printf_c!`](crate::gpu_printf_c) takes a C format string as is
//! (`%d %u %lld %llu %x %f %e %g %s %c %%`); so does `gpu_printf!` when its literal has
//! no `{}` and it has arguments. Arguments are promoted as C varargs are: integers
//! narrower than 32 bits to `int`, `f32` to `double`, `bool` to a string. Each
//! conversion is checked against its argument's type at compile time ([`CInt`],
//! [`CLongLong`], [`CDouble`], [`CString`]): on a GPU a mismatch prints garbage. A `*`
//! width or precision is refused by name.
//!
//! In the emulator, printing is an uninterruptible section (it holds stdout's lock and
//! the allocator's): Ctrl-C stops a printing thread when its `printf` returns.

use core::ffi::CStr;

/// The packed argument buffer `vprintf` reads: each argument at an offset aligned to
/// its size, as C lays out a struct. `N` words of 8 bytes hold `N` arguments.
#[doc(hidden)]
#[repr(C, align(8))]
pub struct PrintfArgs<const N: usize> {
    bytes: [[u8; 8]; N],
    len: usize,
    #[cfg(not(target_arch = "nvptx64"))]
    host: [Option<HostArg>; N],
}

/// How the host renders an argument (the GPU's `vprintf` needs only the bytes).
#[cfg(not(target_arch = "nvptx64"))]
#[doc(hidden)]
#[derive(Clone, Copy)]
pub enum HostArg {
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(*const core::ffi::c_char),
}

impl<const N: usize> Default for PrintfArgs<N> {
    fn default() -> Self {
        PrintfArgs {
            bytes: [[0; 8]; N],
            len: 0,
            #[cfg(not(target_arch = "nvptx64"))]
            host: [None; N],
        }
    }
}

impl<const N: usize> PrintfArgs<N> {
    #[inline(always)]
    fn push_bytes<const S: usize>(&mut self, b: [u8; S]) {
        let start = self.len.next_multiple_of(S);
        let flat = self.bytes.as_flattened_mut();
        flat[start..start + S].copy_from_slice(&b);
        self.len = start + S;
    }

    #[doc(hidden)]
    #[inline(always)]
    pub fn push<A: PrintfArg>(&mut self, arg: A, index: usize) {
        arg.push_to(self);
        #[cfg(not(target_arch = "nvptx64"))]
        {
            self.host[index] = Some(arg.host());
        }
        let _ = index;
    }

    #[doc(hidden)]
    #[inline(always)]
    pub fn as_ptr(&self) -> *const u8 {
        self.bytes.as_ptr().cast()
    }
}

/// A value `gpu_printf!` can print. The constants complete a C conversion (`%` +
/// `DISPLAY` for `{}`, and so on).
pub trait PrintfArg: Copy {
    #[doc(hidden)]
    const DISPLAY: &'static str;
    #[doc(hidden)]
    const HEX: &'static str;
    #[doc(hidden)]
    const UPPER_HEX: &'static str;
    #[doc(hidden)]
    const EXP: &'static str;
    #[doc(hidden)]
    const PRECISION: &'static str;
    #[doc(hidden)]
    const OCTAL: &'static str;
    #[doc(hidden)]
    fn push_to<const N: usize>(self, args: &mut PrintfArgs<N>);
    #[cfg(not(target_arch = "nvptx64"))]
    #[doc(hidden)]
    fn host(self) -> HostArg;
}

macro_rules! printf_arg {
    ($($t:ty => $c:ty, $host:ident, [$d:literal, $x:literal, $ux:literal, $e:literal, $p:literal, $o:literal];)*) => {$(
        impl PrintfArg for $t {
            const DISPLAY: &'static str = $d;
            const HEX: &'static str = $x;
            const UPPER_HEX: &'static str = $ux;
            const EXP: &'static str = $e;
            const PRECISION: &'static str = $p;
            const OCTAL: &'static str = $o;
            #[inline(always)]
            fn push_to<const N: usize>(self, args: &mut PrintfArgs<N>) {
                args.push_bytes((self as $c).to_ne_bytes());
            }
            #[cfg(not(target_arch = "nvptx64"))]
            fn host(self) -> HostArg {
                HostArg::$host(self as _)
            }
        }
    )*};
}

// Conversions: {} {:x} {:X} {:e} {:.N} {:o}. An integer's {:e} and {:.N} print it
// plainly; a float's {:o} as {}.
printf_arg! {
    i8 => i32, Int, ["d", "x", "X", "d", "d", "o"];
    i16 => i32, Int, ["d", "x", "X", "d", "d", "o"];
    i32 => i32, Int, ["d", "x", "X", "d", "d", "o"];
    i64 => i64, Int, ["lld", "llx", "llX", "lld", "lld", "llo"];
    isize => i64, Int, ["lld", "llx", "llX", "lld", "lld", "llo"];
    u8 => u32, UInt, ["u", "x", "X", "u", "u", "o"];
    u16 => u32, UInt, ["u", "x", "X", "u", "u", "o"];
    u32 => u32, UInt, ["u", "x", "X", "u", "u", "o"];
    u64 => u64, UInt, ["llu", "llx", "llX", "llu", "llu", "llo"];
    usize => u64, UInt, ["llu", "llx", "llX", "llu", "llu", "llo"];
    f32 => f64, Float, ["g", "a", "A", "e", "f", "g"];
    f64 => f64, Float, ["g", "a", "A", "e", "f", "g"];
}

/// `%s` arguments: the address of a NUL-terminated string, whatever the conversion.
macro_rules! printf_str_arg {
    ($($(#[$doc:meta])* $t:ty => |$v:ident| $cstr:expr;)*) => {$(
        $(#[$doc])*
        impl PrintfArg for $t {
            const DISPLAY: &'static str = "s";
            const HEX: &'static str = "s";
            const UPPER_HEX: &'static str = "s";
            const EXP: &'static str = "s";
            const PRECISION: &'static str = "s";
            const OCTAL: &'static str = "s";
            #[inline(always)]
            fn push_to<const N: usize>(self, args: &mut PrintfArgs<N>) {
                let $v = self;
                args.push_bytes(($cstr.as_ptr() as usize as u64).to_ne_bytes());
            }
            #[cfg(not(target_arch = "nvptx64"))]
            fn host(self) -> HostArg {
                let $v = self;
                HostArg::Str($cstr.as_ptr())
            }
        }
    )*};
}

printf_str_arg! {
    /// As Rust prints it: `true` or `false` (passed as a string).
    bool => |b| if b { c"true" } else { c"false" };
    &CStr => |s| s;
}

// The C class of each `gpu_printf_c!` conversion, as a trait its argument must have:
// the macro puts a bound per argument, so a mismatch is a compile error at it (on a
// GPU, `vprintf` would read the argument buffer wrongly and print garbage).

/// Declares a C class: its trait, with the message a mismatch gets, and the types it
/// takes.
macro_rules! c_classes {
    ($($(#[$doc:meta])* $class:ident: $message:tt, $label:tt => $($t:ty),*;)*) => {$(
        $(#[$doc])*
        #[diagnostic::on_unimplemented(
            message = $message,
            label = $label,
            note = "%d %i %u %x %X %o %c take i8..i32 or u8..u32; %lld %llu %llx take i64, u64, isize \
                    or usize; %f %e %g take f32 or f64; %s takes a &CStr (c\"…\") or a bool",
            note = "gpu_printf!'s `{{}}` placeholders pick the conversion from the argument's type"
        )]
        pub trait $class: PrintfArg {}

        $(impl $class for $t {})*
    )*};
}

c_classes! {
    /// An argument of `gpu_printf_c!`'s `%d %i %u %x %X %o %c`: a C `int` after promotion.
    CInt:
        "gpu_printf_c!: `{Self}` does not match %d %i %u %x %X %o %c, which read a 32-bit int",
        "printed with a 32-bit int conversion"
        => i8, i16, i32, u8, u16, u32;
    /// An argument of `%lld %llu %llx %llo` (or `%ld`…): a 64-bit integer.
    CLongLong:
        "gpu_printf_c!: `{Self}` does not match %lld %llu %llx %llo (or %ld…), which read a 64-bit integer",
        "printed with a 64-bit integer conversion"
        => i64, u64, isize, usize;
    /// An argument of `%f %e %g %a` (and capitals): a C `double` after promotion.
    CDouble:
        "gpu_printf_c!: `{Self}` does not match %f %e %g %a, which read a double",
        "printed with a floating-point conversion"
        => f32, f64;
    /// An argument of `%s`: a NUL-terminated string (`bool` prints as `true`/`false`).
    CString:
        "gpu_printf_c!: `{Self}` does not match %s, which reads a C string",
        "printed with %s"
        => &CStr, bool;
}

// `gpu_printf_c!` checks each argument with the function of its conversion's class
// (written out, so that a mismatch's note points at a plain bound).

#[doc(hidden)]
#[inline(always)]
pub fn takes_int<T: CInt>(_: &T) {}

#[doc(hidden)]
#[inline(always)]
pub fn takes_long_long<T: CLongLong>(_: &T) {}

#[doc(hidden)]
#[inline(always)]
pub fn takes_double<T: CDouble>(_: &T) {}

#[doc(hidden)]
#[inline(always)]
pub fn takes_string<T: CString>(_: &T) {}

/// Longest C format string `gpu_printf!` builds, with its NUL.
pub const FORMAT_CAPACITY: usize = 256;

/// Join text pieces and conversions, `piece0 conv0 piece1 … pieceN`, into a
/// NUL-terminated C string; runs at compile time inside `gpu_printf!`.
#[doc(hidden)]
pub const fn build_format(pieces: &[&str], specs: &[(&str, &str)]) -> [u8; FORMAT_CAPACITY] {
    let mut out = [0u8; FORMAT_CAPACITY];
    let mut n = 0;
    let mut i = 0;
    while i < pieces.len() {
        n = append(&mut out, n, pieces[i]);
        if i < specs.len() {
            n = append(&mut out, n, specs[i].0);
            n = append(&mut out, n, specs[i].1);
        }
        i += 1;
    }
    out
}

const fn append(out: &mut [u8; FORMAT_CAPACITY], mut n: usize, s: &str) -> usize {
    let bytes = s.as_bytes();
    let mut j = 0;
    while j < bytes.len() {
        // Keep the last byte for the NUL.
        assert!(
            n + 1 < FORMAT_CAPACITY,
            "gpu_printf!: format string too long"
        );
        out[n] = bytes[j];
        n += 1;
        j += 1;
    }
    n
}

/// `printf(format, args…)`: `format` is NUL-terminated (the macros build it so).
/// Returns what CUDA's device `printf` returns: the number of arguments (not, as C's,
/// the bytes written).
#[doc(hidden)]
#[inline(always)]
pub fn printf<const N: usize>(format: &'static [u8], args: &PrintfArgs<N>) -> i32 {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the macros end `format` with a NUL; `args` is laid out as C.
    return unsafe { crate::arch::vprintf(format.as_ptr(), args.as_ptr()) };
    #[cfg(not(target_arch = "nvptx64"))]
    {
        // Formatting allocates and printing locks stdout: Ctrl-C must not stop the
        // thread in the middle (see arch/host/fault.rs).
        crate::arch::uninterruptible(|| std::print!("{}", host_text(format, &args.host)));
        N as i32
    }
}

/// The text the emulator prints for `format` (NUL-terminated) and the arguments.
#[cfg(not(target_arch = "nvptx64"))]
fn host_text(format: &[u8], args: &[Option<HostArg>]) -> std::string::String {
    let end = format.iter().position(|&b| b == 0).unwrap_or(format.len());
    let text = core::str::from_utf8(&format[..end]).expect("built from str literals");
    host_format(text, args)
}

/// `assert!` for kernels: when `cond` is false, the kernel stops and the launch fails.
/// `gpu_assert!(cond, "n = {}", n)` adds a message in `gpu_printf!`'s format.
///
/// In the emulator the launch's error carries the condition, the message and the
/// kernel's own file and line. On a GPU a failed assertion prints the message (device
/// `printf`) and calls CUDA's `__assertfail`, as `assert()` in CUDA C++ does: the
/// launch fails with `CUDA_ERROR_ASSERT`, and the driver prints the condition, file,
/// line, block and thread on the process's stderr (the CUDA context is lost, so the
/// error itself cannot carry them).
#[macro_export]
macro_rules! gpu_assert {
    ($cond:expr $(,)?) => {
        if !$cond {
            $crate::print::assert_failed(
                ::core::concat!(::core::stringify!($cond), "\0"),
                ::core::concat!(::core::file!(), "\0"),
                ::core::line!(),
            );
        }
    };
    ($cond:expr, $($message:tt)+) => {
        if !$cond {
            $crate::__gpu_assert_failed!(
                ::core::stringify!($cond),
                ::core::file!(),
                ::core::line!(),
                $($message)+
            );
        }
    };
}

#[doc(hidden)]
pub const fn cstr(s: &'static str) -> &'static CStr {
    match CStr::from_bytes_with_nul(s.as_bytes()) {
        Ok(c) => c,
        Err(_) => panic!("a string with an inner NUL"),
    }
}

/// A failed `gpu_assert!(cond)` (`cond` and `file` end with a NUL).
#[doc(hidden)]
// Inlined on the GPU as the macro's printf+trap was (one kernel, no call).
#[cfg_attr(target_arch = "nvptx64", inline(always))]
#[cfg_attr(not(target_arch = "nvptx64"), cold, track_caller)]
pub fn assert_failed(cond: &'static str, file: &'static str, line: u32) -> ! {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: NUL-terminated strings, as the macro builds them.
        unsafe { crate::arch::assert_fail(cond.as_ptr(), file.as_ptr(), line) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = (file, line); // the panic's location is the caller's (track_caller)
        std::panic!("gpu_assert!({}) failed", cond.trim_end_matches('\0'))
    }
}

/// A failed `gpu_assert!(cond, message…)`: `format` (NUL-terminated) and `args` are the
/// message's, built as `gpu_printf!` builds them.
#[doc(hidden)]
#[cfg_attr(target_arch = "nvptx64", inline(always))]
#[cfg_attr(not(target_arch = "nvptx64"), cold, track_caller)]
pub fn assert_failed_message<const N: usize>(
    cond: &'static str,
    file: &'static str,
    line: u32,
    format: &'static [u8],
    args: &PrintfArgs<N>,
) -> ! {
    #[cfg(target_arch = "nvptx64")]
    {
        printf(format, args);
        crate::gpu_printf_c!("\n");
        assert_failed(cond, file, line)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = (file, line); // the panic's location is the caller's (track_caller)
        let message = crate::arch::uninterruptible(|| host_text(format, &args.host));
        std::panic!(
            "gpu_assert!({}) failed: {}",
            cond.trim_end_matches('\0'),
            message.trim_end()
        )
    }
}

/// Abort the kernel (`trap`): the launch fails with an error on the host.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn trap() -> ! {
    crate::arch::trap()
}

#[cfg(not(target_arch = "nvptx64"))]
#[path = "print_host.rs"]
mod host_fmt;
#[cfg(not(target_arch = "nvptx64"))]
pub(crate) use host_fmt::host_format;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_packed_as_c_varargs() {
        let mut args = PrintfArgs::<3>::default();
        args.push(7u8, 0); // int at 0
        args.push(1.5f32, 1); // double at 8 (aligned up from 4)
        args.push(-2i32, 2); // int at 16
        assert_eq!(args.len, 20);
        let flat = args.bytes.as_flattened();
        assert_eq!(i32::from_ne_bytes(flat[0..4].try_into().unwrap()), 7);
        assert_eq!(f64::from_ne_bytes(flat[8..16].try_into().unwrap()), 1.5);
        assert_eq!(i32::from_ne_bytes(flat[16..20].try_into().unwrap()), -2);
    }

    #[test]
    fn the_host_renders_c_formats() {
        let mut args = PrintfArgs::<4>::default();
        args.push(-3i32, 0);
        args.push(255u32, 1);
        args.push(0.5f64, 2);
        args.push(c"ok", 3);
        let s = host_format("%d %x %.2f %s 100%%", &args.host);
        assert_eq!(s, "-3 ff 0.50 ok 100%");
        crate::gpu_printf!("from the host: %d\n", 1);
        crate::gpu_printf_c!("c style: %u\n", 2u32);
    }

    #[test]
    fn rust_placeholders_become_c_conversions() {
        const FMT: [u8; FORMAT_CAPACITY] = build_format(
            &["i=", " x=", " 100%% ", "\n"],
            &[
                ("%", i64::DISPLAY),
                ("%.3", f32::PRECISION),
                ("%", bool::DISPLAY),
            ],
        );
        let end = FMT.iter().position(|&b| b == 0).unwrap();
        assert_eq!(&FMT[..end], b"i=%lld x=%.3f 100%% %s\n");
        let mut args = PrintfArgs::<3>::default();
        args.push(-5i64, 0);
        args.push(0.25f32, 1);
        args.push(true, 2);
        let text = core::str::from_utf8(&FMT[..end]).unwrap();
        assert_eq!(host_format(text, &args.host), "i=-5 x=0.250 100% true\n");
        // The macro end to end (it prints on the host).
        crate::gpu_printf!(
            "rust style: {} {:x} {:.2} {} {}\n",
            -1i32,
            255u64,
            1.5f64,
            false,
            c"s"
        );
        crate::gpu_printf!("no arguments, 100%\n");
        // CUDA's printf returns the number of arguments.
        assert_eq!(
            crate::gpu_printf!("{:+} {:#x} {:<4}|\n", 1, 2u32, 3.5f32),
            3
        );
    }

    #[test]
    fn gpu_assert_passes_and_traps() {
        crate::gpu_assert!(1 + 1 == 2);
        let failed = std::panic::catch_unwind(|| crate::gpu_assert!(1 + 1 == 3));
        assert!(failed.is_err());
        let n = 3;
        crate::gpu_assert!(n == 3, "n = {}", n);
        let failed = std::panic::catch_unwind(|| crate::gpu_assert!(n == 4, "n = {}\n", n));
        assert!(failed.is_err());
    }
}
