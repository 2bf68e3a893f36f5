//! What the link step's parameter facts (`noalias`, `readonly`, `align`) and the vector
//! API make of ordinary kernels, read in the PTX (tests/fixtures/readme: the README's
//! kernels as a user writes them, and the same saxpy through `DisjointSlice::map`).

#[allow(dead_code)] // not every helper is used by every test file
mod common;

use std::sync::OnceLock;

use common::{build_for_gpu_with, entry};

/// The README crate's default GPU build, made once for both tests; its target folder
/// stays for the `--no-fmad` build, which then reuses the device build and runs only
/// `llc` again.
struct Build {
    target: tempfile::TempDir,
    /// PTX by arch.
    ptx: Vec<(&'static str, String)>,
    manifest: String,
}

fn default_build() -> &'static Build {
    static BUILD: OnceLock<Build> = OnceLock::new();
    BUILD.get_or_init(|| {
        let target = tempfile::tempdir().unwrap();
        let (ptx, manifest) = build_for_gpu_with("readme", target.path(), &["--no-emu"]);
        Build {
            target,
            ptx,
            manifest,
        }
    })
}

#[test]
fn every_kernel_gets_read_only_loads_and_aligned_parameters() {
    for (arch, ptx) in &default_build().ptx {
        // The README's saxpy, one element per thread: `&[f32]` is read through the
        // non-coherent path, and every pointer parameter carries its element alignment
        // (`.align 1` before the link step said what Rust's types prove).
        let saxpy = entry(ptx, "saxpy");
        assert_eq!(
            saxpy.matches("ld.global.nc.b32").count(),
            2,
            "{arch}:\n{saxpy}"
        );
        assert_eq!(
            saxpy.matches(".ptr .align 4").count(),
            3,
            "{arch}:\n{saxpy}"
        );
        assert!(!saxpy.contains(".align 1 "), "{arch}");
        // Its contract (`#[shapes(x[n], y[n], out[n])]`, a 1-D `#[launch]` policy) is
        // assumed at the entry: no bounds check is left to panic, and `index_1d()` reads
        // none of the launch's other dimensions. `scale`, without one, still does both.
        assert!(!saxpy.contains("call"), "{arch}: a panic path:\n{saxpy}");
        for sreg in ["%ntid.y", "%ntid.z", "%nctaid.y", "%nctaid.z"] {
            assert!(!saxpy.contains(sreg), "{arch}: {sreg}:\n{saxpy}");
        }
        let plain = entry(ptx, "scale_f32");
        assert!(
            plain.contains("call") && plain.contains("%ntid.y"),
            "{arch}:\n{plain}"
        );
        let scale = entry(ptx, "scale_f64");
        assert!(scale.contains("ld.global.nc.b64"), "{arch}:\n{scale}");
        assert_eq!(scale.matches(".ptr .align 8").count(), 2, "{arch}");

        // Through `map`: 128-bit loads on the read-only path and 128-bit stores, and
        // nothing spilled to local memory.
        let map = entry(ptx, "saxpy_map");
        assert_eq!(
            map.matches("ld.global.nc.v4.b32").count(),
            2,
            "{arch}:\n{map}"
        );
        assert_eq!(map.matches("st.global.v4.b32").count(), 1, "{arch}:\n{map}");
        assert!(!map.contains(".local"), "{arch}:\n{map}");
        // The vector loop itself: two loads, four multiply-adds, one store, the step
        // and the test; no bounds check (no branch to a panic) inside it.
        let body = vector_loop(map);
        assert!(
            !body.contains("call"),
            "{arch}: a call in the vector loop:\n{body}"
        );
        assert_eq!(
            body.matches("bra").count(),
            1,
            "{arch}: one branch (the loop's):\n{body}"
        );
    }
}

/// `a * x[i] + y[i]` is one `fma.rn` by default (nvcc's `--fmad=true`, cuda-oxide's
/// default), and a `mul.rn` and an `add.rn` with `--no-fmad` (explicit roundings that
/// ptxas does not fuse either); `oxide_device::float`'s spelled-out roundings stay as
/// written in both builds. The manifest records which.
#[test]
fn multiply_add_contracts_unless_the_build_says_no_fmad() {
    let default = default_build();
    let no_fmad = ["--no-fmad", "--no-emu"];
    let (ptx, manifest) = build_for_gpu_with("readme", default.target.path(), &no_fmad);
    let builds = [
        (default.ptx.clone(), default.manifest.clone(), true),
        (ptx, manifest, false),
    ];
    for (ptxs, manifest, fmad) in builds {
        let flags = if fmad { "default" } else { "--no-fmad" };
        let compact: String = manifest.split_whitespace().collect();
        assert!(
            compact.contains(&format!("\"codegen\":{{\"fmad\":{fmad}}}")),
            "{flags}: {manifest}"
        );
        for (arch, ptx) in ptxs {
            let count = |kernel: &str, op: &str| entry(&ptx, kernel).matches(op).count();
            let saxpy = [
                count("saxpy", "fma.rn.f32"),
                count("saxpy", "mul.rn.f32"),
                count("saxpy", "add.rn.f32"),
            ];
            assert_eq!(
                saxpy,
                if fmad { [1, 0, 0] } else { [0, 1, 1] },
                "{arch} {flags}"
            );
            let twice = ["fma.rn.f32", "mul.rn.f32", "add.rn.f32"]
                .map(|op| count("saxpy_rounded_twice", op));
            assert_eq!(twice, [0, 1, 1], "{arch} {flags}");
            assert_eq!(count("saxpy_rounded_once", "fma.rn.f32"), 1, "{arch}");
        }
    }
}

/// The loop of `entry` that holds its `ld.global.nc.v4`: from the loop header label
/// before it to the branch back.
fn vector_loop(entry: &str) -> &str {
    let at = entry.find("ld.global.nc.v4").expect("a vector load");
    let start = entry[..at].rfind("$L__").expect("a loop label");
    let end = entry[at..]
        .find("bra")
        .map(|i| at + i + 3)
        .expect("the back branch");
    let end = entry[end..].find('\n').map_or(entry.len(), |i| end + i);
    &entry[start..end]
}

/// The fixture holds the README's first Rust block's kernels verbatim, so what the test
/// above reads in the PTX is what the README shows.
#[test]
fn the_fixture_holds_the_readmes_kernels_verbatim() {
    let readme = include_str!("../../../README.md");
    let fixture = include_str!("fixtures/readme/src/lib.rs");
    let block = readme
        .split("```rust\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a Rust block in the README");
    let kernels = &block[block.find("#[kernel]").expect("a kernel in it")..];
    assert!(
        fixture.contains(kernels.trim_end()),
        "the README's kernels differ from fixtures/readme/src/lib.rs:\n{kernels}"
    );
}
