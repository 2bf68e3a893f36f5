//! `#[tune]`: each combination of tuned const values is an instance (its own entry, the
//! hand pick first), crossed with the instances `#[kernel(...)]` lists for the other
//! generic parameters; the tuned lists reach every instance's descriptor.
#![no_std]
extern crate std;

use oxide_abi::descriptor::{KernelDescriptor, LaunchPolicy};
use oxide_abi::tune::{Tune, TuneConst, TuneLaunch};
use oxide_device::prelude::*;

#[kernel]
#[launch(grid_stride(x, per_thread = 8, block = 256, blocks_per_sm = 4))]
#[tune(UNROLL = [4, 2], block = [128, 256], blocks_per_sm = [4, 8])]
pub fn total<const UNROLL: usize>(x: &[f32], out: AtomicSlice<f32>) {
    let _ = (x.len() * UNROLL, out.len());
}

#[kernel(f32, f64)]
#[tune(W = [1, -1])]
pub fn fill<T: Copy + Default, const W: i32>(mut out: DisjointSlice<T>) {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        *o = if W > 0 { T::default() } else { T::default() };
    }
}

// A tile may name a tuned const generic: each instance launches its own tile.
#[kernel]
#[launch(tiles(x, block = (32, 8), tile = (TILE, 16)))]
#[tune(TILE = [64, 32])]
pub fn tiled<const TILE: usize>(x: Array2<f32>) {
    let _ = (x.rows(), TILE);
}

// A row kernel tunes its blocks a multiprocessor from 0, its policy's one block per row.
#[kernel]
#[launch(block_per_row(out, block = 128))]
#[tune(blocks_per_sm = [0, 16])]
pub fn rows(x: Array2<f32>, out: DisjointArray2<f32>) {
    let _ = (x.rows(), out.into_flat().len());
}

// A tune key of scalar parameters (a kernel whose shape is in scalars, not array extents).
#[kernel]
#[tune(V = [0, 1], key = [n, flag])]
pub fn keyed<const V: u32>(n: u32, scale: f32, flag: bool, mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        *o = scale * (n + V + u32::from(flag)) as f32;
    }
}

// Tuples of const generics tuned together: only the combinations listed, crossed with
// the other lists (here 3 × 2 instances, not 2 × 3 × 2), the first tuple the hand pick.
#[kernel]
#[tune(STAGES = [4, 2], (BN, SPLIT) = [(256, 1), (128, 3), (128, 1)])]
pub fn grouped<const BN: usize, const SPLIT: usize, const STAGES: usize>(mut out: DisjointSlice<u32>) {
    let idx = thread::index_1d();
    if let Some(o) = out.get_mut(idx) {
        *o = (BN * SPLIT * STAGES) as u32;
    }
}

fn d_keyed() -> std::vec::Vec<std::string::String> {
    KernelDescriptor::decode(&__oxide_descriptor_keyed_0).unwrap().tune.unwrap().key
}

fn main() {
    let keyed = d_keyed();
    assert_eq!(keyed, ["n", "flag"]);
    let d = |bytes: &[u8]| KernelDescriptor::decode(bytes).unwrap();
    assert_eq!(d(&__oxide_descriptor_keyed_1).tune.unwrap().key, keyed);
    let rows = d(&__oxide_descriptor_rows);
    let policy = LaunchPolicy::BlockPerRow { over: "out".into(), cols: None, block: 128, blocks_per_sm: 0 };
    assert_eq!(rows.launch, Some(policy));
    let launch = std::vec![TuneLaunch { param: "blocks_per_sm".into(), values: std::vec![0, 16] }];
    assert_eq!(rows.tune.map(|t| t.launch), Some(launch));
    let hand = d(&__oxide_descriptor_total_4);
    let other = d(&__oxide_descriptor_total_2);
    assert_eq!((hand.name.as_str(), other.entry.as_str()), ("total", "total_2"));
    let tune = Tune {
        consts: std::vec![TuneConst { param: "UNROLL".into(), values: std::vec!["4".into(), "2".into()] }],
        launch: std::vec![
            TuneLaunch { param: "block".into(), values: std::vec![128, 256] },
            TuneLaunch { param: "blocks_per_sm".into(), values: std::vec![4, 8] },
        ],
        key: std::vec![],
    };
    assert_eq!(hand.tune.as_ref(), Some(&tune));
    assert_eq!(other.tune.as_ref(), Some(&tune));
    assert_eq!(other.instance[0].value, "2");
    let grouped = [
        (&__oxide_descriptor_grouped_256_1_4[..], ["256", "1", "4"]),
        (&__oxide_descriptor_grouped_256_1_2[..], ["256", "1", "2"]),
        (&__oxide_descriptor_grouped_128_3_4[..], ["128", "3", "4"]),
        (&__oxide_descriptor_grouped_128_3_2[..], ["128", "3", "2"]),
        (&__oxide_descriptor_grouped_128_1_4[..], ["128", "1", "4"]),
        (&__oxide_descriptor_grouped_128_1_2[..], ["128", "1", "2"]),
    ];
    assert_eq!(d(grouped[0].0).name, "grouped"); // the hand pick: plain calls name it
    for (bytes, values) in grouped {
        let k = d(bytes);
        let args: std::vec::Vec<_> = k.instance.iter().map(|a| (a.param.as_str(), a.value.as_str())).collect();
        assert_eq!(args, [("BN", values[0]), ("SPLIT", values[1]), ("STAGES", values[2])]);
        // each tuned const's values in the order they first appear: the hand pick's first
        let consts = k.tune.unwrap().consts;
        let lists: std::vec::Vec<_> = consts.iter().map(|c| (c.param.as_str(), c.values.clone())).collect();
        assert_eq!(lists, [
            ("BN", std::vec!["256".into(), "128".into()]),
            ("SPLIT", std::vec!["1".into(), "3".into()]),
            ("STAGES", std::vec!["4".into(), "2".into()]),
        ]);
    }
    for (bytes, tile) in [(&__oxide_descriptor_tiled_64[..], 64), (&__oxide_descriptor_tiled_32[..], 32)] {
        let launch = LaunchPolicy::Tiles { over: "x".into(), block: [32, 8, 1], tile: [tile, 16, 1] };
        assert_eq!(d(bytes).launch, Some(launch));
    }
    for (bytes, ty, w) in [
        (&__oxide_descriptor_fill_f32_1[..], "f32", "1"),
        (&__oxide_descriptor_fill_f32_m1[..], "f32", "-1"),
        (&__oxide_descriptor_fill_f64_1[..], "f64", "1"),
        (&__oxide_descriptor_fill_f64_m1[..], "f64", "-1"),
    ] {
        let k = d(bytes);
        let args: std::vec::Vec<_> = k.instance.iter().map(|a| (a.param.as_str(), a.value.as_str())).collect();
        assert_eq!(args, [("T", ty), ("W", w)]);
        assert_eq!(k.tune.unwrap().consts[0].values, ["1", "-1"]);
    }
}
