//! Exit codes of `cargo oxide`, documented in its `--help` and in the README.

/// Success.
pub const OK: i32 = 0;
/// The build failed: rustc, the link step or ptxas reported errors (printed above).
pub const BUILD_FAILED: i32 = 1;
/// Bad command line (clap's own code for usage errors).
pub const USAGE: i32 = 2;
/// A toolchain piece is missing; the message names it and the command that installs it.
pub const TOOLCHAIN_MISSING: i32 = 3;
/// `inspect` was asked for something the manifest does not have.
pub const NOT_FOUND: i32 = 4;
