//! The emulator's `vprintf`: each conversion of the C format string is handed to the C
//! library's `snprintf` with the argument in its C type, so flags, width, precision,
//! `%g`, `%e` (`1.234568e+06`) and `%a` come out as CUDA's printf prints them (the
//! driver formats device printf on the host with C's rules).

use core::ffi::{CStr, c_char, c_int};
use std::string::String;
use std::vec::Vec;

use super::HostArg;

unsafe extern "C" {
    fn snprintf(buf: *mut c_char, size: usize, format: *const c_char, ...) -> c_int;
}

/// Render a C format string with the packed arguments' host values.
pub(crate) fn host_format(format: &str, args: &[Option<HostArg>]) -> String {
    let mut out = String::new();
    let mut args = args.iter().flatten();
    let bytes = format.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            let next = format[i..].find('%').map_or(bytes.len(), |k| i + k);
            out.push_str(&format[i..next]);
            i = next;
            continue;
        }
        // %[flags][width][.precision][length]conversion
        let start = i;
        i += 1;
        while i < bytes.len() && !bytes[i].is_ascii_alphabetic() && bytes[i] != b'%' {
            i += 1;
        }
        while i < bytes.len() && matches!(bytes[i], b'l' | b'h' | b'z' | b'j' | b't' | b'L') {
            i += 1;
        }
        let Some(&conv) = bytes.get(i) else {
            out.push_str(&format[start..]);
            break;
        };
        i += 1;
        if conv == b'%' {
            out.push('%');
            continue;
        }
        // Flags, width and precision, without any length modifier: the argument is
        // passed at the C type this module picks.
        let stem: String = format[start..i - 1]
            .chars()
            .filter(|c| !matches!(c, 'l' | 'h' | 'z' | 'j' | 't' | 'L'))
            .collect();
        match args.next() {
            Some(arg) => out.push_str(&one(&stem, conv, *arg)),
            None => out.push_str(&format[start..i]),
        }
    }
    out
}

/// One conversion through `snprintf`.
fn one(stem: &str, conv: u8, arg: HostArg) -> String {
    let conv = conv as char;
    if stem.contains('*') {
        // A `*` reads one more argument than the conversion has here (the macros refuse
        // it): shown as written rather than handed to snprintf.
        return std::format!("{stem}{conv}");
    }
    let fmt = |length: &str| {
        let mut f: Vec<u8> = std::format!("{stem}{length}{conv}").into_bytes();
        f.push(0);
        f
    };
    let mut buf = [0u8; 512];
    let (ptr, cap) = (buf.as_mut_ptr().cast::<c_char>(), buf.len());
    // SAFETY: every format is NUL-terminated and has exactly one conversion, matched
    // to the argument's C type; snprintf writes at most `cap` bytes.
    let n = unsafe {
        // Signed or not, an integer reaches snprintf as its 64 bits; the conversion
        // says how to read them.
        let int_bits = match arg {
            HostArg::Int(v) => Some(v),
            HostArg::UInt(v) => Some(v as i64),
            _ => None,
        };
        match (conv, int_bits, arg) {
            ('c', Some(v), _) => snprintf(ptr, cap, fmt("").as_ptr().cast(), v as c_int),
            ('d' | 'i' | 'u' | 'x' | 'X' | 'o', Some(v), _) => {
                snprintf(ptr, cap, fmt("ll").as_ptr().cast(), v)
            }
            ('f' | 'F' | 'e' | 'E' | 'g' | 'G' | 'a' | 'A', _, HostArg::Float(v)) => {
                snprintf(ptr, cap, fmt("").as_ptr().cast(), v)
            }
            ('s', _, HostArg::Str(p)) => snprintf(ptr, cap, fmt("").as_ptr().cast(), p),
            // A mismatch C would make undefined: print what the argument holds.
            (_, _, HostArg::Int(v)) => return std::format!("{v}"),
            (_, _, HostArg::UInt(v)) => return std::format!("{v}"),
            (_, _, HostArg::Float(v)) => return std::format!("{v}"),
            (_, _, HostArg::Str(p)) => return CStr::from_ptr(p).to_string_lossy().into_owned(),
        }
    };
    let len = (n.max(0) as usize).min(cap - 1);
    String::from_utf8_lossy(&buf[..len]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(format: &str, args: &[HostArg]) -> String {
        let args: Vec<Option<HostArg>> = args.iter().map(|a| Some(*a)).collect();
        host_format(format, &args)
    }

    #[test]
    fn floats_print_as_c_does() {
        use HostArg::Float;
        assert_eq!(render("%e", &[Float(1234567.8)]), "1.234568e+06");
        // An f32 widened to double: Rust's `{}` would print 0.10000000149011612.
        assert_eq!(render("%g", &[Float(0.1_f32 as f64)]), "0.1");
        assert_eq!(render("%f", &[Float(0.1_f32 as f64)]), "0.100000");
        assert_eq!(
            render("[%8.3f|%-+8.2e]", &[Float(2.5), Float(-0.0125)]),
            "[   2.500|-1.25e-02]"
        );
        assert_eq!(render("%g %g", &[Float(1e-5), Float(1e20)]), "1e-05 1e+20");
    }

    #[test]
    fn integers_flags_and_widths() {
        use HostArg::{Int, UInt};
        assert_eq!(
            render("%5d|%-5d|%05d", &[Int(42), Int(-7), Int(3)]),
            "   42|-7   |00003"
        );
        assert_eq!(
            render("%#x %#o %X %+d", &[UInt(255), UInt(8), UInt(48879), Int(5)]),
            "0xff 010 BEEF +5"
        );
        assert_eq!(
            render("%llu %lld %c%%", &[UInt(u64::MAX), Int(i64::MIN), Int(65)]),
            "18446744073709551615 -9223372036854775808 A%"
        );
    }
}
