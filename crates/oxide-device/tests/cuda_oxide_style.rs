//! Kernels written in NVIDIA cuda-oxide's style (tests/fixtures/cuda_oxide_style, only
//! the `use` lines changed) build for the GPU with the installed `cargo oxide`, and
//! for the host with plain `cargo build`. Needs the device toolchain that
//! `scripts/setup` installs; the test fails, not skips, when it is missing.
//! `CARGO_OXIDE` names the `cargo-oxide` binary to use.

mod common;

use common::{build_for_gpu, build_for_host, entry, fixture};

#[test]
fn cuda_oxide_style_kernels_build_for_the_gpu() {
    let target = tempfile::tempdir().unwrap();
    for (arch, ptx) in build_for_gpu("cuda_oxide_style", target.path()) {
        for name in ["vecadd", "scale_f32", "scale_f64"] {
            assert!(entry(&ptx, name).contains("ld.global"), "{name} {arch}");
        }
        let reduce = entry(&ptx, "reduce_shared");
        for insn in ["bar.sync", "st.shared", "ld.shared"] {
            assert!(reduce.contains(insn), "reduce_shared lacks {insn} ({arch})");
        }
        // The `static mut` SharedArray became a .shared variable (the macro placed it).
        assert!(reduce.contains(".shared .align 16 .b8"), "no .shared array");
        assert!(entry(&ptx, "warp_reduce").contains("shfl.sync.down.b32"));
        assert!(entry(&ptx, "histogram").contains("atom.relaxed.gpu.add.u32"));
    }
}

#[test]
fn cuda_oxide_style_kernels_build_for_the_host() {
    let target = tempfile::tempdir().unwrap();
    build_for_host("cuda_oxide_style", target.path());
}

/// The property the fixture exists for: apart from `use` lines (and the comments
/// that quote cuda-oxide's), its source names nothing of pyoxide's.
#[test]
fn only_the_use_lines_name_pyoxide() {
    let source = std::fs::read_to_string(fixture("cuda_oxide_style").join("src/lib.rs")).unwrap();
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
