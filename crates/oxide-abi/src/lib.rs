//! The pyoxide contract.
//!
//! Everything that two parts of pyoxide must agree on lives here and nowhere else:
//! the reserved symbol names and section names (shared by the `#[kernel]` macro, the
//! device library and the link step), the kernel descriptor that the macro embeds in
//! the compiled artifact, and the versioned manifest that `cargo oxide build` writes
//! and Python reads. The JSON schema checked in beside this crate is generated from
//! these types; a test fails when the two disagree.
#![cfg_attr(not(feature = "serde"), no_std)]

pub mod arch;
pub mod emu;
pub mod exit;
pub mod inputs;
pub mod limits;
pub mod names;
pub mod shape;
pub mod types;

#[cfg(feature = "serde")]
pub mod descriptor;
#[cfg(feature = "serde")]
pub mod manifest;
#[cfg(feature = "serde")]
pub mod python;
#[cfg(feature = "serde")]
pub mod report;
#[cfg(feature = "serde")]
pub mod tune;
#[cfg(feature = "serde")]
pub mod verify;

pub use shape::ArrayLayout;
pub use types::{ParamKind, ScalarType};

/// `T`'s JSON schema as the checked-in `*.schema.json` files hold it: pretty-printed,
/// ending in a newline (the manifest's, verify's and tune's reports).
#[cfg(feature = "schema")]
pub(crate) fn schema_json<T: schemars::JsonSchema>() -> String {
    let schema = schemars::schema_for!(T);
    let mut s = serde_json::to_string_pretty(&schema).expect("schema serializes");
    s.push('\n');
    s
}

/// Version of the manifest format. Bump on any change a reader could trip over;
/// readers refuse manifests with a newer schema than they know.
pub const MANIFEST_SCHEMA_VERSION: u32 = 12;

/// Version of the descriptor encoding embedded by `#[kernel]`. The link step refuses
/// descriptors from a different version (the macro and cargo-oxide were built apart).
pub const DESCRIPTOR_VERSION: u32 = 2;
