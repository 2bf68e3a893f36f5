//! sm_90 instructions: the sm90a fixture (wgmma, mbarrier, TMA loads and stores, named
//! barriers, stmatrix) passes ptxas for `sm_90a`, and a build for plain `sm_90` is
//! refused naming the kernel and the instruction.

// This test builds with its own arch list, not the helpers' sm_80,sm_90 builds.
#[allow(dead_code)]
mod common;

use std::process::Command;

use common::{cargo_oxide, entry, fixture};

fn build(arch: &str, target: &std::path::Path) -> std::process::Output {
    Command::new(cargo_oxide())
        .args([
            "oxide",
            "build",
            "--no-emu",
            "--require-ptxas",
            "--arch",
            arch,
            "--manifest-path",
        ])
        .arg(fixture("sm90a").join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target)
        .output()
        .expect("cargo-oxide runs (scripts/setup installs it)")
}

#[test]
fn sm90a_kernels_pass_ptxas_and_plain_targets_are_refused() {
    let target = tempfile::tempdir().unwrap();
    let out = build("sm_90a", target.path());
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "sm_90a build failed:\n{log}");
    assert!(log.contains("verified by ptxas"), "{log}");
    let ptx =
        std::fs::read_to_string(target.path().join("oxide/release/sm90a.sm_90a.ptx")).unwrap();
    let wg = entry(&ptx, "wgmma_tile");
    for insn in [
        "wgmma.fence.sync.aligned",
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16",
        "wgmma.commit_group.sync.aligned",
        // wgmma_wait_group_acc: the wait, naming the 32 accumulators.
        "wgmma.wait_group.sync.aligned 0; /* %",
        "mbarrier.init.shared.b64",
        "mbarrier.arrive.expect_tx.shared::cta.b64",
        "mbarrier.try_wait.parity.shared::cta.b64",
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        "fence.proxy.async.shared::cta",
    ] {
        assert!(wg.contains(insn), "{insn} missing");
    }
    assert!(entry(&ptx, "stmatrix_tile").contains("stmatrix.sync.aligned.m8n8.x1.shared.b16"));
    let store = entry(&ptx, "tma_store_tile");
    // The named barrier is the unaligned form, which LLVM may copy into both arms of
    // a branch on the thread index without splitting a warp across two `.aligned` ones.
    assert!(
        !store.contains("bar.sync"),
        "an aligned `bar.sync` in:\n{store}"
    );
    for insn in [
        "barrier.sync",
        "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group",
        "cp.async.bulk.commit_group",
        "cp.async.bulk.wait_group.read 0",
        "prefetch.tensormap [",
        "cp.async.bulk.wait_group 0",
    ] {
        assert!(store.contains(insn), "{insn} missing");
    }
    // What a user sees: `cargo oxide inspect` prints the kernel's sm_90a PTX.
    let shown = Command::new(cargo_oxide())
        .args([
            "oxide",
            "inspect",
            "wgmma_tile",
            "--arch",
            "sm_90a",
            "--manifest-path",
        ])
        .arg(fixture("sm90a").join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    assert!(
        text.contains("wgmma.mma_async.sync.aligned.m64n64k16"),
        "{text}"
    );

    let out = build("sm_90", target.path());
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "a wgmma kernel built for sm_90:\n{log}"
    );
    assert!(
        log.contains("kernel `wgmma_tile` uses `wgmma.fence.sync.aligned`, which only sm_90a has")
            && log.contains("--arch sm_90a"),
        "{log}"
    );
}
