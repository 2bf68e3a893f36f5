//! The descriptors that `#[kernel]` embeds in kernels_sm90a, decoded as the link step
//! will decode them: attention's schedule and grid are tuned consts with a scalar tune key.

use oxide_abi::descriptor::KernelDescriptor;
use oxide_abi::tune::{Tune, TuneConst};

#[test]
fn attention_sm90_tunes_its_schedule_and_grid_per_head_dim_seqlen_k_and_causal() {
    let consts = [
        ("PINGPONG", &["0", "1"][..]),
        ("PERSISTENT", &["0", "1", "2"][..]),
    ];
    let tune = Tune {
        consts: consts
            .iter()
            .map(|(param, values)| TuneConst {
                param: param.to_string(),
                values: values.iter().map(|v| v.to_string()).collect(),
            })
            .collect(),
        launch: vec![],
        key: vec!["head_dim".into(), "seqlen_k".into(), "causal".into()],
    };
    let d = |bytes: &[u8]| KernelDescriptor::decode(bytes).unwrap();
    let descriptors = [
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_0_0[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_0_1[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_0_2[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_1_0[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_1_1[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_1_2[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_f16_0_0[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_f16_0_1[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_f16_0_2[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_f16_1_0[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_f16_1_1[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_f16_1_2[..]),
    ];
    let mut i = 0;
    for ty in ["bf16", "f16"] {
        for pingpong in ["0", "1"] {
            for persistent in ["0", "1", "2"] {
                let d = &descriptors[i];
                i += 1;
                let entry = format!("attention_sm90_{ty}_{pingpong}_{persistent}");
                assert_eq!(
                    (d.name.as_str(), d.entry.as_str()),
                    ("attention_sm90", &*entry)
                );
                let args: Vec<(&str, &str)> = d
                    .instance
                    .iter()
                    .map(|a| (a.param.as_str(), a.value.as_str()))
                    .collect();
                assert_eq!(
                    args,
                    [
                        ("T", ty),
                        ("PINGPONG", pingpong),
                        ("PERSISTENT", persistent)
                    ]
                );
                assert_eq!(d.tune.as_ref(), Some(&tune));
            }
        }
    }
}
