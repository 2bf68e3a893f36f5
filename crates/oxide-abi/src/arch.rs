//! GPU architecture names, parsed by one rule for all of pyoxide: `sm_NN` with NN a
//! number of at least [`MIN_ARCH`](crate::limits::MIN_ARCH) written without leading
//! zeros, and at most one suffix, `a` (arch-specific features: that exact GPU only) or
//! `f` (the family: same major version). Python gets a generated copy of this rule
//! (`_abi.parse_arch`), checked against the cases in [`EXAMPLES`] as this parser decides
//! them.

use crate::limits::MIN_ARCH;

/// The architectures `cargo oxide build` compiles for when none are given.
pub const DEFAULT_ARCHS: [&str; 2] = ["sm_80", "sm_90"];

/// The suffix of an architecture name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suffix {
    /// `sm_90`: runs on sm_90 and newer.
    Plain,
    /// `sm_90a`: arch-specific features (wgmma, setmaxnreg); runs on sm_90 only.
    Specific,
    /// `sm_100f`: the family's features; runs on the same major version.
    Family,
}

impl Suffix {
    pub const fn letter(self) -> &'static str {
        match self {
            Suffix::Plain => "",
            Suffix::Specific => "a",
            Suffix::Family => "f",
        }
    }
}

/// A parsed architecture name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arch {
    pub number: u32,
    pub suffix: Suffix,
}

/// Why a name is not an architecture pyoxide builds for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArchError {
    /// Not of the form `sm_NN[a|f]`.
    Malformed,
    /// An architecture older than [`MIN_ARCH`] (the ptxas of CUDA 13 refuses it).
    TooOld(u32),
}

/// Parse an architecture name (no surrounding spaces).
pub fn parse(name: &str) -> Result<Arch, ArchError> {
    let Some(rest) = name.strip_prefix("sm_") else {
        return Err(ArchError::Malformed);
    };
    let (digits, suffix) = match rest.as_bytes().last() {
        Some(b'a') => (&rest[..rest.len() - 1], Suffix::Specific),
        Some(b'f') => (&rest[..rest.len() - 1], Suffix::Family),
        _ => (rest, Suffix::Plain),
    };
    let well_formed = !digits.is_empty()
        && digits.len() <= 4
        && !digits.starts_with('0')
        && digits.bytes().all(|b| b.is_ascii_digit());
    if !well_formed {
        return Err(ArchError::Malformed);
    }
    let mut number = 0u32;
    for b in digits.bytes() {
        number = number * 10 + u32::from(b - b'0');
    }
    if number < MIN_ARCH {
        return Err(ArchError::TooOld(number));
    }
    Ok(Arch { number, suffix })
}

/// Names and how [`parse`] decides them; the Python copy of the rule must agree on each
/// (pyoxide's tests check it).
pub const EXAMPLES: [&str; 18] = [
    "sm_75",
    "sm_80",
    "sm_90",
    "sm_90a",
    "sm_100f",
    "sm_120",
    "sm_70",
    "sm_9",
    "sm_",
    "sm_a",
    "sm_90af",
    "sm_090",
    "SM_90",
    "compute_90",
    " sm_90",
    "sm_9 0",
    "sm_+90",
    "sm_99999",
];

#[cfg(feature = "serde")]
impl ArchError {
    /// The message for a refused name, with the fix.
    pub fn message(self, name: &str) -> String {
        match self {
            ArchError::Malformed => format!(
                "`{name}` is not a GPU architecture pyoxide can build for; use sm_NN with \
                 NN ≥ {MIN_ARCH} and an optional a or f suffix, e.g. sm_80,sm_90"
            ),
            ArchError::TooOld(_) => format!(
                "`{name}` is older than the GPUs pyoxide builds for: use sm_NN with \
                 NN ≥ {MIN_ARCH} (the ptxas of CUDA 13 refuses older ones), e.g. sm_80,sm_90"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_by_one_rule() {
        let ok = |n: u32, suffix| Ok(Arch { number: n, suffix });
        assert_eq!(parse("sm_80"), ok(80, Suffix::Plain));
        assert_eq!(parse("sm_90a"), ok(90, Suffix::Specific));
        assert_eq!(parse("sm_100f"), ok(100, Suffix::Family));
        assert_eq!(parse("sm_70"), Err(ArchError::TooOld(70)));
        for bad in [
            "sm_90af", "sm_090", "SM_90", "sm_", "sm_a", " sm_90", "sm_+90", "sm_99999",
        ] {
            assert_eq!(parse(bad), Err(ArchError::Malformed), "{bad}");
        }
        for d in DEFAULT_ARCHS {
            assert!(parse(d).is_ok());
        }
    }
}
