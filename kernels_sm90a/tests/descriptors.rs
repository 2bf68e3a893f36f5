//! The descriptors that `#[kernel]` embeds in kernels_sm90a, decoded as the link step
//! will decode them: attention's schedule is a tuned const with a scalar tune key.

use oxide_abi::descriptor::KernelDescriptor;
use oxide_abi::tune::{Tune, TuneConst};

#[test]
fn attention_sm90_tunes_its_schedule_per_head_dim_seqlen_k_and_causal() {
    let tune = Tune {
        consts: vec![TuneConst {
            param: "PINGPONG".into(),
            values: vec!["0".into(), "1".into()],
        }],
        launch: vec![],
        key: vec!["head_dim".into(), "seqlen_k".into(), "causal".into()],
    };
    for (bytes, entry, ty, schedule) in [
        (
            &kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_0[..],
            "attention_sm90_bf16_0",
            "bf16",
            "0",
        ),
        (
            &kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_1[..],
            "attention_sm90_bf16_1",
            "bf16",
            "1",
        ),
        (
            &kernels_sm90a::__oxide_descriptor_attention_sm90_f16_0[..],
            "attention_sm90_f16_0",
            "f16",
            "0",
        ),
        (
            &kernels_sm90a::__oxide_descriptor_attention_sm90_f16_1[..],
            "attention_sm90_f16_1",
            "f16",
            "1",
        ),
    ] {
        let d = KernelDescriptor::decode(bytes).unwrap();
        assert_eq!(
            (d.name.as_str(), d.entry.as_str()),
            ("attention_sm90", entry)
        );
        let args: Vec<(&str, &str)> = d
            .instance
            .iter()
            .map(|a| (a.param.as_str(), a.value.as_str()))
            .collect();
        assert_eq!(args, [("T", ty), ("PINGPONG", schedule)]);
        assert_eq!(d.tune.as_ref(), Some(&tune));
    }
}
