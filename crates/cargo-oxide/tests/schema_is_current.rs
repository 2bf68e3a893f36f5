//! The checked-in JSON schema is what Python and other readers validate against; it
//! must be exactly what the Rust types generate. Regenerate with
//! `OXIDE_BLESS=1 cargo test -p cargo-oxide --test schema_is_current`.

use std::path::Path;

#[test]
fn checked_in_schema_matches_the_rust_types() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../oxide-abi/manifest.schema.json");
    let generated = oxide_abi::manifest::json_schema();
    if std::env::var_os("OXIDE_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "{} is out of date with crates/oxide-abi/src/manifest.rs; regenerate it with \
         `OXIDE_BLESS=1 cargo test -p cargo-oxide --test schema_is_current` and commit it",
        path.display()
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
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../oxide-abi/verify-report.schema.json");
    let generated = oxide_abi::verify::json_schema();
    if std::env::var_os("OXIDE_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "{} is out of date with crates/oxide-abi/src/verify.rs; regenerate it with \
         `OXIDE_BLESS=1 cargo test -p cargo-oxide --test schema_is_current` and commit it",
        path.display()
    );
}

#[test]
fn checked_in_tune_report_schema_matches_the_rust_types() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../oxide-abi/tune-report.schema.json");
    let generated = oxide_abi::tune::json_schema();
    if std::env::var_os("OXIDE_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "{} is out of date with crates/oxide-abi/src/tune.rs; regenerate it with \
         `OXIDE_BLESS=1 cargo test -p cargo-oxide --test schema_is_current` and commit it",
        path.display()
    );
}
