//! Every PTX form the device library can emit passes ptxas: the coverage fixture calls
//! every atomic at every scope and ordering, every shuffle, vote, match, reduction,
//! math function and `gpu_printf!` argument kind (tests/fixtures/coverage).

mod common;

use common::{build_for_gpu, build_for_host, entry};

#[test]
fn every_device_operation_passes_ptxas() {
    let target = tempfile::tempdir().unwrap();
    for (arch, ptx) in build_for_gpu("coverage", target.path()) {
        let atomics = entry(&ptx, "atomics");
        for scope in ["cta", "gpu", "sys"] {
            for sem in ["relaxed", "acquire", "release", "acq_rel"] {
                let form = format!("atom.{sem}.{scope}.");
                assert!(atomics.contains(&form), "{form} missing ({arch})");
            }
            for form in [
                format!("fence.sc.{scope}"),
                format!("ld.acquire.{scope}"),
                format!("st.release.{scope}"),
            ] {
                assert!(atomics.contains(&form), "{form} missing ({arch})");
            }
        }
        for op in [
            "add.f32", "add.f64", "min.s64", "max.u32", "cas.b64", "exch.b32",
        ] {
            assert!(atomics.contains(op), "{op} missing ({arch})");
        }
        let warps = entry(&ptx, "warps");
        for insn in [
            "shfl.sync.idx.b32",
            "shfl.sync.bfly.b32",
            "shfl.sync.down.b32",
            "shfl.sync.up.b32",
            "vote.sync.ballot.b32",
            "match.any.sync.b32",
            "match.any.sync.b64",
            "activemask.b32",
            "membar.cta",
            "membar.gl",
            "membar.sys",
            "bar.sync",
        ] {
            assert!(warps.contains(insn), "{insn} missing ({arch})");
        }
        // libdevice linked and inlined for both float types.
        for name in ["maths_f32", "maths_f64"] {
            assert!(!entry(&ptx, name).contains("call.uni __nv_"), "{name}");
        }
        assert!(entry(&ptx, "misc").contains("vprintf"));
        // The Rust-style format became a C string constant at compile time.
        let c_bytes: String = "rust style: %d %llu %x %llX %e %.3f %s %s\n"
            .bytes()
            .map(|b| format!("{b}, "))
            .collect();
        assert!(
            ptx.contains(c_bytes.trim_end_matches(", ")),
            "no built format ({arch})"
        );
        assert!(entry(&ptx, "halves").contains("ret;"));
        let tc = entry(&ptx, "tensor_cores");
        for insn in [
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
            "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
            "cvt.rna.tf32.f32",
            "ldmatrix.sync.aligned.m8n8.x1.shared.b16",
            "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
            "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
            "cp.async.commit_group",
            "cp.async.wait_group 0",
        ] {
            assert!(tc.contains(insn), "{insn} missing ({arch})");
        }
        // cp.async takes its shared destination as a 32-bit window offset (`[%r…]`, not
        // a 64-bit `cvta.to.shared` result) and its global source as a 64-bit address.
        for (cache, bytes) in [("ca", 4), ("ca", 8), ("ca", 16), ("cg", 16)] {
            let prefix = format!("cp.async.{cache}.shared.global [%r");
            assert!(
                tc.lines().any(|l| l.trim_start().starts_with(&prefix)
                    && l.contains("], [%rd")
                    && l.contains(&format!("], {bytes}, "))),
                "{prefix}…], [%rd…], {bytes}, … missing ({arch})"
            );
        }
        let reduxes = entry(&ptx, "reduxes");
        for op in [
            "add.s32", "min.u32", "max.u32", "min.s32", "max.s32", "and.b32", "or.b32", "xor.b32",
        ] {
            assert!(
                reduxes.contains(&format!("redux.sync.{op}")),
                "redux.sync.{op} ({arch})"
            );
        }
    }
}

#[test]
fn the_coverage_fixture_builds_for_the_host() {
    let target = tempfile::tempdir().unwrap();
    build_for_host("coverage", target.path());
}
