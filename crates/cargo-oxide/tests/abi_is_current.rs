//! pyoxide/_manifest/abi.py is generated from oxide-abi's tables; it must be exactly what they
//! generate. Regenerate with `OXIDE_BLESS=1 cargo test -p cargo-oxide --test abi_is_current`.

mod checked_in;

use checked_in::assert_current;

#[test]
fn checked_in_python_tables_match_the_rust_ones() {
    assert_current(
        "../../pyoxide/_manifest/abi.py",
        &oxide_abi::python::module_source(),
        "crates/oxide-abi",
    );
}
