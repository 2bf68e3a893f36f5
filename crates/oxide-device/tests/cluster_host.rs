//! On the host (the emulator's backend) every cluster instruction stops with a message
//! that names it and says where it runs, rather than answering as if the block were
//! alone in its cluster.

use oxide_device::barrier::Barrier;
use oxide_device::cluster;
use oxide_device::cooperative_groups::{ThreadGroup, this_cluster};
use oxide_device::tma::{TmaDescriptor, cp_async_bulk_tensor_2d_g2s_multicast};

/// A call that the emulator must refuse.
type Call = Box<dyn FnOnce() + std::panic::UnwindSafe>;

fn refusal(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let payload = std::panic::catch_unwind(f).expect_err("the emulator must refuse");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn each_cluster_instruction_is_refused_by_name() {
    let mut word = 0u32;
    let p = &raw mut word;
    let cases: Vec<(&str, Call)> = vec![
        ("%cluster_ctarank", Box::new(|| _ = cluster::block_rank())),
        (
            "%cluster_nctarank",
            Box::new(|| _ = cluster::cluster_size()),
        ),
        (
            "%cluster_ctaid.y",
            Box::new(|| _ = cluster::cluster_ctaidY()),
        ),
        ("%nclusterid.x", Box::new(|| _ = cluster::num_clusters())),
        (
            "%is_explicit_cluster",
            Box::new(|| _ = cluster::is_explicit_cluster()),
        ),
        ("barrier.cluster.arrive", Box::new(cluster::cluster_sync)),
        ("barrier.cluster.arrive", Box::new(|| this_cluster().sync())),
        (
            "fence.acq_rel.cluster",
            Box::new(cluster::fence_acq_rel_cluster),
        ),
        (
            "mapa",
            Box::new(move || _ = unsafe { cluster::map_shared_rank(p, 1) }),
        ),
        (
            "ld.shared::cluster",
            Box::new(move || _ = unsafe { cluster::dsmem_read_u32(p, 1) }),
        ),
        (
            "ld.shared::cluster.v4.f32",
            Box::new(move || _ = unsafe { cluster::dsmem_read_f32x4(p.cast_const().cast(), 1) }),
        ),
        (
            "st.shared::cluster",
            Box::new(move || unsafe { cluster::dsmem_write_u32(p, 1, 7) }),
        ),
        (
            "multicast::cluster",
            Box::new(|| unsafe {
                cp_async_bulk_tensor_2d_g2s_multicast(
                    std::ptr::null_mut(),
                    std::ptr::null::<TmaDescriptor>(),
                    0,
                    0,
                    std::ptr::null_mut::<Barrier>(),
                    0b11,
                )
            }),
        ),
    ];
    for (instruction, f) in cases {
        let text = refusal(f);
        assert!(text.contains(instruction), "{instruction}: {text}");
        assert!(
            text.contains("is not emulated") && text.contains("sm_90"),
            "{text}"
        );
        assert!(text.contains("thread-block clusters"), "{text}");
    }
    assert_eq!(word, 0, "nothing was written");
}
