//! With the `bundle-kernels` feature (the pyoxide wheel: pyproject.toml turns it on):
//! - build the bundled kernels_rs into pyoxide/_prebuilt, so that `maturin build` alone
//!   makes a wheel whose `from pyoxide import kernels` needs no Rust toolchain;
//! - put the kernel author's kit beside it: the source of the crates a kernel crate
//!   depends on (pyoxide/_rust, a workspace of its own, since they inherit from one) and
//!   the cargo-oxide binary (pyoxide/_bin), so that `pyoxide new` and `pyoxide build`
//!   work from an installed wheel, given a Rust toolchain, without a pyoxide checkout.

use std::fs;
use std::io;
use std::path::Path;

/// The crates a `pyoxide new` project needs (oxide-device's own dependencies included).
const KIT_CRATES: &[&str] = &["oxide-abi", "oxide-macros", "oxide-device", "oxide-build"];

fn main() {
    println!("cargo:rerun-if-env-changed=PYOXIDE_NATIVE_STAMP");
    if std::env::var_os("CARGO_FEATURE_BUNDLE_KERNELS").is_none() {
        return;
    }
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let checkout = checkout.canonicalize().expect("the pyoxide checkout");
    let cargo_oxide = oxide_build::build_cargo_oxide(&checkout)
        .unwrap_or_else(|e| panic!("\n\npyoxide-native build script: {e}\n"));
    oxide_build::Bundle::pyoxide_bundled(&checkout)
        .cargo_oxide(&cargo_oxide)
        .run();
    write_kit(&checkout, &cargo_oxide)
        .unwrap_or_else(|e| panic!("\n\npyoxide-native build script: writing the kit: {e}\n"));
}

/// pyoxide/_rust and pyoxide/_bin, each written beside its place and renamed into it.
fn write_kit(checkout: &Path, cargo_oxide: &Path) -> io::Result<()> {
    let package = checkout.join("pyoxide");
    let staging = package.join(".kit-staging");
    let _ = fs::remove_dir_all(&staging);
    let rust = staging.join("_rust");
    for name in KIT_CRATES {
        let from = checkout.join("crates").join(name);
        let to = rust.join("crates").join(name);
        fs::create_dir_all(&to)?;
        fs::copy(from.join("Cargo.toml"), to.join("Cargo.toml"))?;
        copy_tree(&from.join("src"), &to.join("src"))?;
    }
    fs::write(rust.join("Cargo.toml"), kit_workspace_manifest(checkout)?)?;
    let bin = staging.join("_bin");
    fs::create_dir_all(&bin)?;
    fs::copy(cargo_oxide, bin.join("cargo-oxide"))?;
    for part in ["_rust", "_bin"] {
        let _ = fs::remove_dir_all(package.join(part));
        fs::rename(staging.join(part), package.join(part))?;
    }
    fs::remove_dir_all(&staging)
}

/// The checkout's workspace manifest with only the kit's crates as members: they inherit
/// their version, edition and shared dependencies from it.
fn kit_workspace_manifest(checkout: &Path) -> io::Result<String> {
    let root = fs::read_to_string(checkout.join("Cargo.toml"))?;
    let members: Vec<String> = KIT_CRATES
        .iter()
        .map(|c| format!("\"crates/{c}\""))
        .collect();
    let members = format!("members = [{}]", members.join(", "));
    let mut replaced = false;
    let lines: Vec<String> = root
        .lines()
        .map(|line| {
            if line.trim_start().starts_with("members") && !replaced {
                replaced = true;
                members.clone()
            } else {
                line.to_owned()
            }
        })
        .collect();
    if !replaced {
        return Err(io::Error::other(
            "no `members = [...]` line in the root Cargo.toml",
        ));
    }
    Ok(format!(
        "# Written by crates/pyoxide-native/build.rs: the crates a kernel crate depends on.\n{}\n",
        lines.join("\n")
    ))
}

fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let dest = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &dest)?;
        } else {
            fs::copy(entry.path(), dest)?;
        }
    }
    Ok(())
}
