//! Exit codes of `cargo oxide` and of `pyoxide`: one table, so a script that runs either
//! reads a code the same way. Both commands' `--help` and docs/guide/cli.md print it.

/// One exit code: its number, its name and what it means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExitCode {
    pub code: i32,
    pub name: &'static str,
    pub meaning: &'static str,
}

/// The exit codes: each a constant and a row of [`ALL`], its name spelled once.
macro_rules! exit_codes {
    ($($(#[$doc:meta])* $name:ident = $code:literal, $meaning:literal;)*) => {
        $($(#[$doc])* pub const $name: i32 = $code;)*

        pub const ALL: [ExitCode; [$($code),*].len()] = [$(ExitCode {
            code: $name,
            name: stringify!($name),
            meaning: $meaning,
        }),*];
    };
}

exit_codes! {
    /// Success.
    OK = 0, "success";
    /// The build failed: rustc, the link step or ptxas reported errors (printed above).
    BUILD_FAILED = 1, "the build failed (rustc, the link step or ptxas)";
    /// Bad command line: an unknown option, an architecture that is not one pyoxide builds
    /// for, a path that is not a kernel crate.
    USAGE = 2, "bad command line (an unknown option, an architecture pyoxide does not \
                  build for, a path that is not a kernel crate)";
    /// A toolchain piece is missing; the message names it and the command that installs it.
    TOOLCHAIN_MISSING = 3, "a toolchain piece is missing (named, with its install command)";
    /// The kernel or architecture asked for is not in the manifest.
    NOT_FOUND = 4, "no such kernel or architecture in the manifest";
    /// A manifest or an artifact it names cannot be used (malformed, newer, missing, changed).
    LOAD_FAILED = 5, "the manifest or an artifact is unusable (malformed, newer, missing, changed)";
    /// Any other error.
    ERROR = 6, "any other error";
    /// `pyoxide verify` ran and a kernel failed a case (or the sanitizer reported errors).
    VERIFY_FAILED = 7, "a kernel failed verification (a wrong result, or a sanitizer error)";
    /// A GPU command (`pyoxide bench`, `verify --backend cupy`) found no CUDA device or CuPy.
    NO_DEVICE = 8, "no CUDA device (or no CuPy) for a command that needs the GPU";
}

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
