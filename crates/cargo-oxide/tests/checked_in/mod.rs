//! The regenerate-diff-bless check of a file generated from oxide-abi and checked in.

use std::path::Path;

/// Fails unless `file` (relative to this crate) holds exactly `generated`, naming the
/// Rust `source` it comes from and the test that regenerates it (the calling test
/// binary); with `OXIDE_BLESS` set, writes it first.
pub fn assert_current(file: &str, generated: &str, source: &str) {
    let test = env!("CARGO_CRATE_NAME");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    if std::env::var_os("OXIDE_BLESS").is_some() {
        std::fs::write(&path, generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "{} is out of date with {source}; regenerate it with \
         `OXIDE_BLESS=1 cargo test -p cargo-oxide --test {test}` and commit it",
        path.display()
    );
}
