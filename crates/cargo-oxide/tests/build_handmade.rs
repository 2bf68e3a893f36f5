//! End to end: `cargo oxide build` on a kernel crate written without the macro
//! (tests/fixtures/handmade), so the pipeline is tested on its own. Needs the device
//! toolchain that `scripts/setup` installs (rustc with rust-src, LLVM tools, ptxas,
//! libdevice); these tests do not skip when it is missing, they fail.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use oxide_abi::ParamKind;
use oxide_abi::manifest::Manifest;

fn fixture_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_fixture_into(dir.path());
    dir
}

fn copy_fixture_into(dir: &Path) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/handmade");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    for f in ["Cargo.toml", "src/lib.rs"] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
}

fn cargo_oxide(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cargo-oxide"));
    cmd.arg("oxide").args(args).current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn build_ok(dir: &Path, extra: &[&str]) -> (PathBuf, Manifest) {
    let mut args = vec!["build", "--json"];
    args.extend_from_slice(extra);
    let out = cargo_oxide(dir, &args, &[]);
    assert!(out.status.success(), "build failed:\n{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let path = PathBuf::from(summary["manifest"].as_str().unwrap());
    let manifest = Manifest::from_json(&std::fs::read_to_string(&path).unwrap()).unwrap();
    (path, manifest)
}

#[test]
fn builds_verified_ptx_and_a_manifest_for_each_arch() {
    let dir = fixture_copy();
    let (path, m) = build_ok(dir.path(), &["--arch", "sm_80,sm_90"]);
    assert_eq!(m.schema, oxide_abi::MANIFEST_SCHEMA_VERSION);
    assert_eq!(m.krate.name, "handmade_kernels");
    assert_eq!(m.profile, "release");
    assert!(m.toolchain.rustc.starts_with("rustc "));
    assert!(
        m.toolchain.ptxas.is_some(),
        "ptxas must have verified the PTX"
    );
    assert!(m.sources.iter().any(|s| s.path.ends_with("src/lib.rs")));
    // The fixture does not use oxide-device, so it has no host entries: no emulator.
    assert_eq!(m.emulator, None);

    let entries: Vec<&str> = m.kernels.iter().map(|k| k.entry.as_str()).collect();
    assert_eq!(entries, ["exp_reverse", "fill_u32", "rotate"]);
    let exp = &m.kernels[0];
    assert_eq!(exp.params[1].kind, ParamKind::DisjointSlice);
    assert!(exp.params[1].mutable);
    assert_eq!(m.kernels[1].instance[0].value, "u32");

    let archs: Vec<&str> = m.artifacts.iter().map(|a| a.arch.as_str()).collect();
    assert_eq!(archs, ["sm_80", "sm_90"]);
    for a in &m.artifacts {
        let ptx = std::fs::read_to_string(path.parent().unwrap().join(&a.path)).unwrap();
        assert_eq!(a.sha256, sha256(ptx.as_bytes()));
        assert!(ptx.contains(&format!(".target {}", a.arch)));
        let body = ptx
            .split(".entry exp_reverse(")
            .nth(1)
            .expect("exp_reverse is an entry");
        for needle in [
            ".maxntid 256",
            ".minnctapersm 2",
            "st.shared",
            "ld.shared",
            "bar.sync",
            "ex2.approx",
        ] {
            assert!(
                body.contains(needle),
                "{needle} missing from exp_reverse on {}",
                a.arch
            );
        }
        assert!(ptx.contains(".entry fill_u32("));
        assert!(
            ptx.contains(".extern .shared .align 16 .b8 __oxide_dynamic_shared[];"),
            "{ptx}"
        );
        let rotate = ptx.split(".entry rotate(").nth(1).unwrap();
        assert!(rotate.contains("ld.shared.b64") && rotate.contains("st.shared.b64"));
        // Descriptors and libdevice's reflection strings are gone; expf was inlined.
        for absent in [
            "oxide.kernels",
            "__nvvm_reflect",
            "__nv_expf",
            "CUDA_FTZ",
            "\"version\"",
        ] {
            assert!(
                !ptx.contains(absent),
                "{absent} left in the PTX for {}",
                a.arch
            );
        }
        let report = a.ptxas.as_ref().unwrap();
        assert_eq!(report["exp_reverse"].shared_bytes, 1024);
        assert_eq!(report["exp_reverse"].barriers, 1);
        assert!(report["fill_u32"].registers > 0);
    }
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn a_warm_rebuild_relinks_without_rebuilding_core() {
    let dir = fixture_copy();
    let (path, _) = build_ok(dir.path(), &[]);
    let sysroot_files = || -> Vec<(PathBuf, std::time::SystemTime)> {
        let root = cache_dir().join("sysroot");
        let mut v = Vec::new();
        for entry in walk(&root) {
            if entry.extension().is_some_and(|e| e == "rlib") {
                let t = std::fs::metadata(&entry).unwrap().modified().unwrap();
                v.push((entry, t));
            }
        }
        v
    };
    let before = sysroot_files();
    assert!(!before.is_empty(), "the core sysroot was not cached");
    let lib = dir.path().join("src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    std::fs::write(
        &lib,
        text.replace("*out.add(i) = v;", "*out.add(i) = v ^ 1;"),
    )
    .unwrap();
    let out = cargo_oxide(dir.path(), &["build"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("Compiling core"),
        "core was rebuilt:\n{}",
        stderr(&out)
    );
    assert_eq!(before, sysroot_files());
    let ptx = std::fs::read_to_string(path.with_file_name("handmade_kernels.sm_90.ptx")).unwrap();
    assert!(ptx.contains("xor.b32"), "the edited kernel was not rebuilt");
}

fn cache_dir() -> PathBuf {
    if let Some(p) = std::env::var_os("PYOXIDE_CACHE_DIR") {
        return PathBuf::from(p);
    }
    if let Some(p) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(p).join("pyoxide");
    }
    PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/pyoxide")
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn rustc_errors_reach_the_user_with_spans() {
    let dir = fixture_copy();
    let lib = dir.path().join("src/lib.rs");
    let mut text = std::fs::read_to_string(&lib).unwrap();
    text.push_str("\npub fn broken() -> u32 { \"not a number\" }\n");
    std::fs::write(&lib, text).unwrap();
    let err = failed_build(dir.path(), &[], 1);
    assert_mentions(&err, &["error[E0308]: mismatched types", "src/lib.rs:"]);
}

/// `cargo oxide build` in `dir` with `env`, which must exit with `code`; its stderr.
fn failed_build(dir: &Path, env: &[(&str, &str)], code: i32) -> String {
    let out = cargo_oxide(dir, &["build"], env);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(code), "{err}");
    err
}

/// `err` mentions each of `needles`.
fn assert_mentions(err: &str, needles: &[&str]) {
    for needle in needles {
        assert!(err.contains(needle), "no {needle:?} in:\n{err}");
    }
}

/// Two copies of one crate in two folders, built into one target dir (a shared
/// `CARGO_TARGET_DIR`). cargo hashes a path package relative to its workspace root, so
/// both copies' units have one name and one fingerprint; the copy that does not compile,
/// its sources older than the other copy's build, was found fresh and reported built
/// from the other copy's link step.
#[test]
fn a_copy_in_another_folder_is_compiled_not_taken_from_a_shared_target_dir() {
    let target = tempfile::tempdir().unwrap();
    let env = [("CARGO_TARGET_DIR", target.path().to_str().unwrap())];
    let good = fixture_copy();
    let parent = tempfile::tempdir().unwrap();
    let broken = parent.path().join("gpu_printf_c!(\"%*d\",_6,_x)");
    copy_fixture_into(&broken);
    let lib = broken.join("src/lib.rs");
    let mut text = std::fs::read_to_string(&lib).unwrap();
    text.push_str("\npub fn broken() -> u32 { \"not a number\" }\n");
    std::fs::write(&lib, text).unwrap();
    let out = cargo_oxide(good.path(), &["build"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = cargo_oxide(&broken, &["build", "--json"], &env);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "not refused:\n{err}");
    assert!(err.contains("error[E0308]: mismatched types"), "{err}");
    assert!(out.stdout.is_empty(), "a build report for a failed build");
}

#[test]
fn missing_libdevice_is_a_clean_link_error_with_the_install_command() {
    let dir = fixture_copy();
    let env = [("OXIDE_LIBDEVICE", "/nonexistent/libdevice.10.bc")];
    let err = failed_build(dir.path(), &env, 1);
    assert_mentions(&err, &["python3 -m pip install nvidia-nvvm", "__nv_"]);
    assert!(
        !err.contains("linking with"),
        "rustc's linker dump leaked:\n{err}"
    );
}

#[test]
fn a_missing_toolchain_piece_is_named_with_its_install_command() {
    let dir = fixture_copy();
    let err = failed_build(dir.path(), &[("OXIDE_LLVM_BIN", "/nonexistent")], 3);
    assert_mentions(&err, &["llvm-link, opt, llc", "apt-get install -y llvm-"]);
}

#[test]
fn bad_architectures_are_refused_before_building() {
    let dir = fixture_copy();
    // A bad --arch is a usage error (oxide-abi's exit table), whatever the toolchain.
    let out = cargo_oxide(dir.path(), &["build", "--arch", "sm_80,compute_90"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`compute_90` is not a GPU architecture"),
        "{}",
        stderr(&out)
    );
    // Older than ptxas builds for: refused up front, not after a build.
    let out = cargo_oxide(dir.path(), &["build", "--arch", "sm_70"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("NN ≥ 75"), "{}", stderr(&out));
    let out = cargo_oxide(dir.path(), &["build", "--no-such-flag"], &[]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn doctor_reports_every_piece() {
    let out = cargo_oxide(Path::new("."), &["doctor", "--json"], &[]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pieces: Vec<&str> = report["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["piece"].as_str().unwrap())
        .collect();
    assert_eq!(
        pieces,
        [
            "rustc",
            "rust-src",
            "cargo",
            "llvm tools",
            "libdevice",
            "ptxas",
            "cuda driver"
        ]
    );
    assert_eq!(report["ready_to_build"], true);
    assert_eq!(out.status.code(), Some(0));
    // With no usable rustc, doctor says how to get one and exits 3.
    let out = cargo_oxide(
        Path::new("."),
        &["doctor"],
        &[("OXIDE_RUSTC", "/nonexistent/rustc")],
    );
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("MISSING") && text.contains("apt-get install -y rustc-web"),
        "{text}"
    );
}

#[test]
fn inspect_prints_ptx_and_resources() {
    let dir = fixture_copy();
    build_ok(dir.path(), &[]);
    let out = cargo_oxide(
        dir.path(),
        &["inspect", "exp_reverse", "--arch", "sm_90"],
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(".entry exp_reverse("), "{text}");
    assert!(text.contains("bytes shared"), "{text}");
    assert!(
        !text.contains(".entry fill_u32("),
        "inspect showed another kernel:\n{text}"
    );
    let out = cargo_oxide(dir.path(), &["inspect", "nope"], &[]);
    assert_eq!(out.status.code(), Some(4));
    assert!(stderr(&out).contains("exp_reverse, fill_u32, rotate"));
}

#[test]
fn clean_removes_the_device_build_and_optionally_the_sysroot() {
    let dir = fixture_copy();
    let (manifest, _) = build_ok(dir.path(), &[]);
    let out_dir = manifest.parent().unwrap().to_path_buf();
    let device_dir = dir.path().join("target/nvptx64-nvidia-cuda/release");
    assert!(out_dir.is_dir() && device_dir.is_dir());
    let out = cargo_oxide(dir.path(), &["clean"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!out_dir.exists() && !device_dir.exists());

    // --sysroot removes the cached core of this toolchain. In a private cache (so other
    // tests keep the shared one), plant folders named like the shared cache's sysroots,
    // one of which is this toolchain's, and check that exactly that one goes.
    let cache = tempfile::tempdir().unwrap();
    let cache_env = [("PYOXIDE_CACHE_DIR", cache.path().to_str().unwrap())];
    let out = cargo_oxide(dir.path(), &["clean", "--sysroot"], &cache_env);
    assert!(out.status.success(), "{}", stderr(&out));
    let sysroot_parent = cache.path().join("sysroot");
    std::fs::create_dir_all(&sysroot_parent).unwrap();
    for entry in std::fs::read_dir(cache_dir().join("sysroot"))
        .unwrap()
        .flatten()
    {
        if entry.path().is_dir() && !entry.file_name().to_string_lossy().starts_with('.') {
            std::fs::create_dir_all(sysroot_parent.join(entry.file_name())).unwrap();
        }
    }
    let planted = std::fs::read_dir(&sysroot_parent).unwrap().count();
    assert!(
        planted > 0,
        "no shared sysroot to learn the folder name from"
    );
    let out = cargo_oxide(dir.path(), &["clean", "--sysroot"], &cache_env);
    assert!(out.status.success(), "{}", stderr(&out));
    let left = std::fs::read_dir(&sysroot_parent).unwrap().count();
    assert_eq!(
        left,
        planted - 1,
        "clean --sysroot did not remove this toolchain's sysroot"
    );
}
