//! Exit codes of `cargo oxide`: oxide-abi's table, shared with `pyoxide`, documented in
//! `--help` and in docs/guide/cli.md.

use std::fmt;

pub use oxide_abi::exit::{
    BUILD_FAILED, LOAD_FAILED, NOT_FOUND, OK, TOOLCHAIN_MISSING, USAGE, help_text,
};

/// Context that gives an error its exit code (an error without one is BUILD_FAILED).
/// `commands::report` leaves it out of the printed cause chain.
#[derive(Debug, Clone, Copy)]
pub struct Code(pub i32);

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "exit code {}", self.0)
    }
}

impl std::error::Error for Code {}

/// Mark `r`'s error as ending the command with `code`.
pub fn coded<T>(r: anyhow::Result<T>, code: i32) -> anyhow::Result<T> {
    r.map_err(|e| e.context(Code(code)))
}

/// The exit code an error ends the command with.
pub fn code_of(err: &anyhow::Error) -> i32 {
    err.downcast_ref::<Code>().map_or(BUILD_FAILED, |c| c.0)
}
