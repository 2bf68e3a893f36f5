//! The descriptors that `#[kernel]` embeds in kernels_sm90a, decoded as the link step
//! will decode them: attention's schedule, grid and d = 64 tile are tuned consts with a scalar tune key.

use oxide_abi::descriptor::KernelDescriptor;
use oxide_abi::tune::{Tune, TuneConst};

#[test]
fn attention_sm90_tunes_its_schedule_grid_and_tile_per_head_dim_seqlen_k_and_causal() {
    let consts = [
        ("PINGPONG", &["0", "1"][..]),
        ("PERSISTENT", &["0", "1", "2"][..]),
        ("D64_ROWS", &["192", "128"][..]),
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
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_0_0_192[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_0_0_128[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_0_1_192[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_0_1_128[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_0_2_192[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_0_2_128[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_1_0_192[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_1_0_128[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_1_1_192[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_1_1_128[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_1_2_192[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_bf16_1_2_128[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_f16_0_0_192[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_f16_0_0_128[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_f16_0_1_192[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_f16_0_1_128[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_f16_0_2_192[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_f16_0_2_128[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_f16_1_0_192[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_f16_1_0_128[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_f16_1_1_192[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_f16_1_1_128[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_f16_1_2_192[..]),
        d(&kernels_sm90a::__oxide_descriptor_attention_sm90_f16_1_2_128[..]),
    ];
    let mut i = 0;
    for ty in ["bf16", "f16"] {
        for pingpong in ["0", "1"] {
            for (persistent, rows) in ["0", "1", "2"]
                .into_iter()
                .flat_map(|g| ["192", "128"].map(|r| (g, r)))
            {
                let d = &descriptors[i];
                i += 1;
                let entry = format!("attention_sm90_{ty}_{pingpong}_{persistent}_{rows}");
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
                        ("PERSISTENT", persistent),
                        ("D64_ROWS", rows)
                    ]
                );
                assert_eq!(d.tune.as_ref(), Some(&tune));
            }
        }
    }
}
