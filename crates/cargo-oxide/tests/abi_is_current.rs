//! pyoxide/_manifest/abi.py is generated from oxide-abi's tables; it must be exactly what they
//! generate. Regenerate with `OXIDE_BLESS=1 cargo test -p cargo-oxide --test abi_is_current`.

use std::path::Path;

#[test]
fn checked_in_python_tables_match_the_rust_ones() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pyoxide/_manifest/abi.py");
    let generated = oxide_abi::python::module_source();
    if std::env::var_os("OXIDE_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "{} is out of date with crates/oxide-abi; regenerate it with \
         `OXIDE_BLESS=1 cargo test -p cargo-oxide --test abi_is_current` and commit it",
        path.display()
    );
}
