//! Helpers shared by the integration tests that build fixture kernel crates.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A fixture crate under tests/fixtures.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// `CARGO_OXIDE`, else `cargo-oxide` on PATH, else `~/.cargo/bin/cargo-oxide`.
pub fn cargo_oxide() -> PathBuf {
    if let Some(p) = std::env::var_os("CARGO_OXIDE") {
        return PathBuf::from(p);
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("cargo-oxide"))
            .find(|p| p.is_file())
    });
    on_path.unwrap_or_else(|| {
        let home = std::env::var_os("HOME").expect("HOME");
        Path::new(&home).join(".cargo/bin/cargo-oxide")
    })
}

/// `cargo oxide build` of fixture `name` for sm_80 and sm_90 into `target`; returns
/// the `.ptx` texts by arch.
pub fn build_for_gpu(name: &str, target: &Path) -> Vec<(&'static str, String)> {
    build_for_gpu_with(name, target, &[]).0
}

/// [`build_for_gpu`] with more `cargo oxide build` arguments; also returns the manifest's
/// text.
pub fn build_for_gpu_with(
    name: &str,
    target: &Path,
    extra: &[&str],
) -> (Vec<(&'static str, String)>, String) {
    let out = Command::new(cargo_oxide())
        .args(["oxide", "build", "--arch", "sm_80,sm_90", "--manifest-path"])
        .arg(fixture(name).join("Cargo.toml"))
        .args(extra)
        .env("CARGO_TARGET_DIR", target)
        .output()
        .expect("cargo-oxide runs (scripts/setup installs it)");
    assert!(
        out.status.success(),
        "cargo oxide build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let release = target.join("oxide/release");
    let manifest = std::fs::read_to_string(release.join(format!("{name}.manifest.json"))).unwrap();
    let ptx = ["sm_80", "sm_90"]
        .into_iter()
        .map(|arch| {
            let file = format!("{name}.{arch}.ptx");
            assert!(manifest.contains(&file), "{file} not in the manifest");
            (arch, std::fs::read_to_string(release.join(file)).unwrap())
        })
        .collect();
    (ptx, manifest)
}

/// Plain `cargo build` of fixture `name` for the host.
pub fn build_for_host(name: &str, target: &Path) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "--offline", "--manifest-path"])
        .arg(fixture(name).join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "host build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The body of `.entry NAME(` up to its closing brace.
pub fn entry<'p>(ptx: &'p str, name: &str) -> &'p str {
    let start = ptx
        .find(&format!(".entry {name}("))
        .unwrap_or_else(|| panic!("no entry {name}"));
    let end = ptx[start..].find("\n}").expect("entry end") + start;
    &ptx[start..end]
}
