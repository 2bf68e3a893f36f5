//! Exit codes of `cargo oxide` and of `pyoxide`: one table, so a script that runs either
//! reads a code the same way. Both commands' `--help` and docs/guide/cli.md print it.

/// One exit code: its number, its name and what it means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitCode {
    pub code: i32,
    pub name: &'static str,
    pub meaning: &'static str,
}

/// Success.
pub const OK: i32 = 0;
/// The build failed: rustc, the link step or ptxas reported errors (printed above).
pub const BUILD_FAILED: i32 = 1;
/// Bad command line: an unknown option, an architecture that is not one pyoxide builds
/// for, a path that is not a kernel crate.
pub const USAGE: i32 = 2;
/// A toolchain piece is missing; the message names it and the command that installs it.
pub const TOOLCHAIN_MISSING: i32 = 3;
/// The kernel or architecture asked for is not in the manifest.
pub const NOT_FOUND: i32 = 4;
/// A manifest or an artifact it names cannot be used (malformed, newer, missing, changed).
pub const LOAD_FAILED: i32 = 5;
/// Any other error.
pub const ERROR: i32 = 6;
/// `pyoxide verify` ran and a kernel failed a case (or the sanitizer reported errors).
pub const VERIFY_FAILED: i32 = 7;
/// A GPU command (`pyoxide bench`, `verify --backend cupy`) found no CUDA device or CuPy.
pub const NO_DEVICE: i32 = 8;

pub const ALL: [ExitCode; 9] = [
    ExitCode {
        code: OK,
        name: "OK",
        meaning: "success",
    },
    ExitCode {
        code: BUILD_FAILED,
        name: "BUILD_FAILED",
        meaning: "the build failed (rustc, the link step or ptxas)",
    },
    ExitCode {
        code: USAGE,
        name: "USAGE",
        meaning: "bad command line (an unknown option, an architecture pyoxide does not \
                  build for, a path that is not a kernel crate)",
    },
    ExitCode {
        code: TOOLCHAIN_MISSING,
        name: "TOOLCHAIN_MISSING",
        meaning: "a toolchain piece is missing (named, with its install command)",
    },
    ExitCode {
        code: NOT_FOUND,
        name: "NOT_FOUND",
        meaning: "no such kernel or architecture in the manifest",
    },
    ExitCode {
        code: LOAD_FAILED,
        name: "LOAD_FAILED",
        meaning: "the manifest or an artifact is unusable (malformed, newer, missing, changed)",
    },
    ExitCode {
        code: ERROR,
        name: "ERROR",
        meaning: "any other error",
    },
    ExitCode {
        code: VERIFY_FAILED,
        name: "VERIFY_FAILED",
        meaning: "a kernel failed verification (a wrong result, or a sanitizer error)",
    },
    ExitCode {
        code: NO_DEVICE,
        name: "NO_DEVICE",
        meaning: "no CUDA device (or no CuPy) for a command that needs the GPU",
    },
];

/// The table as `--help` prints it.
#[cfg(feature = "serde")]
pub fn help_text() -> String {
    let mut s = String::from("Exit codes:\n");
    for e in ALL {
        s.push_str(&format!("  {}  {}\n", e.code, e.meaning));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_in_order() {
        for (i, e) in ALL.iter().enumerate() {
            assert_eq!(e.code, i as i32, "{}", e.name);
        }
    }
}
