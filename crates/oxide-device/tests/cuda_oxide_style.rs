//! Kernels written in NVIDIA cuda-oxide's style (tests/fixtures/cuda_oxide_style, only
//! the `use` lines changed) build for the GPU with the installed `cargo oxide`, and
//! for the host with plain `cargo build`. Needs the device toolchain that
//! `scripts/setup` installs; the test fails, not skips, when it is missing.
//!
//! `CARGO_OXIDE` names the `cargo-oxide` binary to use; otherwise PATH, then
//! `~/.cargo/bin`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cuda_oxide_style")
}

fn cargo_oxide() -> PathBuf {
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

/// The body of `.entry NAME(` up to its closing brace.
fn entry<'p>(ptx: &'p str, name: &str) -> &'p str {
    let start = ptx
        .find(&format!(".entry {name}("))
        .unwrap_or_else(|| panic!("no entry {name}"));
    let end = ptx[start..].find("\n}").expect("entry end") + start;
    &ptx[start..end]
}

#[test]
fn cuda_oxide_style_kernels_build_for_the_gpu() {
    let target = tempfile::tempdir().unwrap();
    let out = Command::new(cargo_oxide())
        .args(["oxide", "build", "--arch", "sm_80,sm_90", "--manifest-path"])
        .arg(fixture().join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target.path())
        .output()
        .expect("cargo-oxide runs (scripts/setup installs it)");
    assert!(
        out.status.success(),
        "cargo oxide build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let release = target.path().join("oxide/release");
    for arch in ["sm_80", "sm_90"] {
        let ptx =
            std::fs::read_to_string(release.join(format!("cuda_oxide_style.{arch}.ptx"))).unwrap();
        for name in ["vecadd", "scale_f32", "scale_f64"] {
            assert!(entry(&ptx, name).contains("ld.global"), "{name}");
        }
        let reduce = entry(&ptx, "reduce_shared");
        for insn in ["bar.sync", "st.shared", "ld.shared"] {
            assert!(reduce.contains(insn), "reduce_shared lacks {insn}");
        }
        // The `static mut` SharedArray became a .shared variable (the macro placed it).
        assert!(ptx.contains(".shared .align 16 .b8"), "no .shared array");
        assert!(entry(&ptx, "warp_reduce").contains("shfl.sync.down.b32"));
        assert!(entry(&ptx, "histogram").contains("atom.relaxed.gpu.add.u32"));
        let manifest =
            std::fs::read_to_string(release.join("cuda_oxide_style.manifest.json")).unwrap();
        assert!(manifest.contains(&format!("cuda_oxide_style.{arch}.ptx")));
    }
}

#[test]
fn cuda_oxide_style_kernels_build_for_the_host() {
    let target = tempfile::tempdir().unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "--offline", "--manifest-path"])
        .arg(fixture().join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "host build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The property the fixture exists for: apart from `use` lines (and the comments
/// that quote cuda-oxide's), its source names nothing of pyoxide's.
#[test]
fn only_the_use_lines_name_pyoxide() {
    let source = std::fs::read_to_string(fixture().join("src/lib.rs")).unwrap();
    for line in source.lines() {
        if line.contains("oxide_device") {
            assert!(line.starts_with("use oxide_device::"), "{line}");
        }
    }
    let ours = source.lines().filter(|l| l.starts_with("use ")).count();
    let theirs = source
        .lines()
        .filter(|l| l.starts_with("// cuda-oxide: use "))
        .count();
    assert_eq!(ours, theirs, "each use line has cuda-oxide's beside it");
}
