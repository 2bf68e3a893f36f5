//! The checked-in JSON schema is what Python and other readers validate against; it
//! must be exactly what the Rust types generate. Regenerate with
//! `OXIDE_BLESS=1 cargo test -p cargo-oxide --test schema_is_current`.

mod checked_in;

use checked_in::assert_current;

#[test]
fn checked_in_schema_matches_the_rust_types() {
    assert_current(
        "../oxide-abi/manifest.schema.json",
        &oxide_abi::manifest::json_schema(),
        "crates/oxide-abi/src/manifest.rs",
    );
}

#[test]
fn schema_declares_the_current_version_field() {
    let schema: serde_json::Value =
        serde_json::from_str(&oxide_abi::manifest::json_schema()).unwrap();
    let required = schema["required"].as_array().unwrap();
    for field in ["schema", "crate", "toolchain", "artifacts", "kernels"] {
        assert!(
            required.iter().any(|r| r == field),
            "{field} must be required"
        );
    }
}

#[test]
fn newer_schema_is_refused_with_a_remedy() {
    let text = format!("{{\"schema\": {}}}", oxide_abi::MANIFEST_SCHEMA_VERSION + 1);
    let err = oxide_abi::manifest::Manifest::from_json(&text).unwrap_err();
    assert!(err.contains("upgrade pyoxide"), "{err}");
}

#[test]
fn checked_in_verify_report_schema_matches_the_rust_types() {
    assert_current(
        "../oxide-abi/verify-report.schema.json",
        &oxide_abi::verify::json_schema(),
        "crates/oxide-abi/src/verify.rs",
    );
}

#[test]
fn checked_in_tune_report_schema_matches_the_rust_types() {
    assert_current(
        "../oxide-abi/tune-report.schema.json",
        &oxide_abi::tune::json_schema(),
        "crates/oxide-abi/src/tune.rs",
    );
}
