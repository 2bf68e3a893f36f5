//! End to end on the CPU: `cargo oxide build` of kernels_rs writes `<crate>.emu.so`
//! and records it in the manifest; its host entries run real buffers.

use std::path::{Path, PathBuf};
use std::process::Command;

use oxide_abi::emu::{HostEntry, OxideLaunch, STATUS_BAD_LAUNCH, STATUS_OK, call as call_entry};
use oxide_abi::manifest::Manifest;

fn build_kernels(out_dir: &Path) -> (Manifest, PathBuf) {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels_rs");
    let out = Command::new(env!("CARGO_BIN_EXE_cargo-oxide"))
        .args([
            "oxide",
            "build",
            "--json",
            "--arch",
            "sm_80",
            "--manifest-path",
        ])
        .arg(crate_dir.join("Cargo.toml"))
        .arg("--out-dir")
        .arg(out_dir)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "build failed:\n{log}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let manifest_path = PathBuf::from(summary["manifest"].as_str().unwrap());
    let m = Manifest::from_json(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    let emu = PathBuf::from(summary["emulator"].as_str().expect("an emulator path"));
    (m, emu)
}

fn call(
    lib: &libloading::Library,
    name: &str,
    grid: u32,
    block: u32,
    args: &[u64],
) -> (i32, String) {
    // SAFETY: the symbol has the host entry's signature (oxide_abi::emu).
    let entry: libloading::Symbol<HostEntry> = unsafe { lib.get(name.as_bytes()) }.unwrap();
    // SAFETY: the buffers behind `args` outlive the call.
    let (status, error) = unsafe { call_entry(*entry, &OxideLaunch::linear(grid, block, 0), args) };
    (status, error.text())
}

fn words<T>(s: &[T]) -> [u64; 2] {
    [s.as_ptr() as u64, s.len() as u64]
}

#[test]
fn kernels_rs_runs_on_the_emulator_library() {
    let out = tempfile::tempdir().unwrap();
    let (m, emu) = build_kernels(out.path());
    let recorded = m.emulator.expect("the manifest records the emulator");
    assert_eq!(recorded.path, "kernels_rs.emu.so");
    assert_eq!(emu, out.path().join(&recorded.path));

    // SAFETY: a library built from this workspace's kernels.
    let lib = unsafe { libloading::Library::new(&emu) }.unwrap();

    let n = 1000;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| 2.0 * i as f32).collect();
    let c = vec![0.0f32; n];
    let args = [words(&a), words(&b), words(&c)].concat();
    let (status, msg) = call(&lib, "__oxide_host_vecadd", 4, 256, &args);
    assert_eq!(status, STATUS_OK, "{msg}");
    assert!(c.iter().enumerate().all(|(i, &v)| v == 3.0 * i as f32));

    let x: Vec<f32> = (0..100_000).map(|i| (i % 7) as f32).collect();
    let total = [0.0f32];
    let args = [words(&x), words(&total)].concat();
    let (status, msg) = call(&lib, "__oxide_host_reduce_sum_f32", 16, 256, &args);
    assert_eq!(status, STATUS_OK, "{msg}");
    let expected: f64 = x.iter().map(|&v| f64::from(v)).sum();
    assert!(
        (f64::from(total[0]) - expected).abs() < 1e-3 * expected,
        "{} vs {expected}",
        total[0]
    );

    let (status, msg) = call(&lib, "__oxide_host_vecadd", 1, 32, &args[..2]);
    assert_eq!(status, STATUS_BAD_LAUNCH);
    assert!(msg.contains("argument words"), "{msg}");
}
