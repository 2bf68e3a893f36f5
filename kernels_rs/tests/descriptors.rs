//! The descriptors that `#[kernel]` embeds, decoded as the link step will decode them.

use oxide_abi::descriptor::{GenericArg, KernelDescriptor, LaunchPolicy, ParamDescriptor};
use oxide_abi::{ArrayLayout, ParamKind, ScalarType};

/// Every descriptor static of the crate, by entry symbol.
fn descriptors() -> Vec<KernelDescriptor> {
    [
        &kernels_rs::__oxide_descriptor_vecadd[..],
        &kernels_rs::__oxide_descriptor_saxpy[..],
        &kernels_rs::__oxide_descriptor_scale_f32[..],
        &kernels_rs::__oxide_descriptor_scale_f64[..],
        &kernels_rs::__oxide_descriptor_reduce_sum_f32[..],
        &kernels_rs::__oxide_descriptor_histogram[..],
        &kernels_rs::__oxide_descriptor_matmul_tiled[..],
        &kernels_rs::__oxide_descriptor_softmax_rows[..],
        &kernels_rs::__oxide_descriptor_activate[..],
        &kernels_rs::__oxide_descriptor_scan_blocks_u32[..],
        &kernels_rs::__oxide_descriptor_histogram_global[..],
        &kernels_rs::__oxide_descriptor_reduce_blocks_f32[..],
        &kernels_rs::__oxide_descriptor_layernorm_rows[..],
        &kernels_rs::__oxide_descriptor_transpose_f32_64[..],
        &kernels_rs::__oxide_descriptor_transpose_f64_64[..],
        &kernels_rs::__oxide_descriptor_transpose_u32_64[..],
        &kernels_rs::__oxide_descriptor_transpose_f32_32[..],
        &kernels_rs::__oxide_descriptor_transpose_f64_32[..],
        &kernels_rs::__oxide_descriptor_transpose_u32_32[..],
        &kernels_rs::__oxide_descriptor_sgemm_128[..],
        &kernels_rs::__oxide_descriptor_sgemm_64[..],
        &kernels_rs::__oxide_descriptor_sgemm_256[..],
        &kernels_rs::__oxide_descriptor_gemm_bf16[..],
        &kernels_rs::__oxide_descriptor_gemm_bf16_bf16[..],
        &kernels_rs::__oxide_descriptor_copy_2d_f32[..],
        &kernels_rs::__oxide_descriptor_copy_2d_f64[..],
        &kernels_rs::__oxide_descriptor_copy_2d_u32[..],
        &kernels_rs::__oxide_descriptor_copy_3d_f32[..],
        &kernels_rs::__oxide_descriptor_copy_3d_f64[..],
        &kernels_rs::__oxide_descriptor_copy_3d_u32[..],
        &kernels_rs::__oxide_descriptor_softmax_rows_backward[..],
        &kernels_rs::__oxide_descriptor_layernorm_rows_backward[..],
        &kernels_rs::__oxide_descriptor_layernorm_rows_backward_affine[..],
        &kernels_rs::__oxide_descriptor_attention_bf16[..],
        &kernels_rs::__oxide_descriptor_attention_f16[..],
    ]
    .into_iter()
    .map(|bytes| KernelDescriptor::decode(bytes).unwrap_or_else(|e| panic!("{e}")))
    .collect()
}

fn descriptor(entry: &str) -> KernelDescriptor {
    descriptors()
        .into_iter()
        .find(|d| d.entry == entry)
        .unwrap()
}

/// An f32 shaped array parameter with its layout and dimension names.
fn shaped(name: &str, kind: ParamKind, layout: ArrayLayout, dims: &[&str]) -> ParamDescriptor {
    ParamDescriptor {
        array: Some(oxide_abi::shape::ArrayShape {
            layout,
            dims: dims.iter().map(|d| d.to_string()).collect(),
        }),
        ..param(name, kind, ScalarType::F32)
    }
}

/// `p` with element type `ty`.
fn of(ty: ScalarType, p: ParamDescriptor) -> ParamDescriptor {
    ParamDescriptor { ty, ..p }
}

fn param(name: &str, kind: ParamKind, ty: ScalarType) -> ParamDescriptor {
    ParamDescriptor::new(name, kind, ty, kind.always_mutable())
}

/// The line of `pub fn NAME` in the crate's source file `file` (under src/).
fn line_of_fn(file: &str, name: &str) -> u32 {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(file);
    let source = std::fs::read_to_string(path).unwrap();
    let needle = format!("pub fn {name}");
    let index = source.lines().position(|l| l.starts_with(&needle)).unwrap();
    index as u32 + 1
}

#[test]
fn one_descriptor_per_entry() {
    let entries: Vec<String> = descriptors().into_iter().map(|d| d.entry).collect();
    assert_eq!(
        entries,
        [
            "vecadd",
            "saxpy",
            "scale_f32",
            "scale_f64",
            "reduce_sum_f32",
            "histogram",
            "matmul_tiled",
            "softmax_rows",
            "activate",
            "scan_blocks_u32",
            "histogram_global",
            "reduce_blocks_f32",
            "layernorm_rows",
            "transpose_f32_64",
            "transpose_f64_64",
            "transpose_u32_64",
            "transpose_f32_32",
            "transpose_f64_32",
            "transpose_u32_32",
            "sgemm_128",
            "sgemm_64",
            "sgemm_256",
            "gemm_bf16",
            "gemm_bf16_bf16",
            "copy_2d_f32",
            "copy_2d_f64",
            "copy_2d_u32",
            "copy_3d_f32",
            "copy_3d_f64",
            "copy_3d_u32",
            "softmax_rows_backward",
            "layernorm_rows_backward",
            "layernorm_rows_backward_affine",
            "attention_bf16",
            "attention_f16"
        ]
    );
}

#[test]
fn device_library_kernels() {
    use ArrayLayout::{C, Strided};
    use ParamKind::*;
    use ScalarType::*;
    let d = descriptor("reduce_sum_f32");
    assert_eq!(
        d.params,
        [param("x", Slice, F32), param("out", AtomicSlice, F32)]
    );
    assert_eq!(d.launch_bounds.map(|b| b.max_threads), Some(1024));
    for (entry, want) in [
        (
            "histogram",
            vec![param("x", Slice, U32), param("bins", AtomicSlice, U32)],
        ),
        (
            "matmul_tiled",
            vec![
                shaped("a", Array, C, &["m", "k"]),
                shaped("b", Array, Strided, &["k", "n"]),
                shaped("c", DisjointArray, C, &["m", "n"]),
            ],
        ),
        (
            "layernorm_rows",
            vec![
                shaped("x", Array, C, &["rows", "cols"]),
                shaped("weight", Array, C, &["cols"]),
                shaped("bias", Array, C, &["cols"]),
                shaped("out", DisjointArray, C, &["rows", "cols"]),
                param("eps", Scalar, F32),
            ],
        ),
        (
            "softmax_rows_backward",
            vec![
                shaped("out", Array, C, &["rows", "cols"]),
                shaped("grad_out", Array, C, &["rows", "cols"]),
                shaped("grad_x", DisjointArray, C, &["rows", "cols"]),
            ],
        ),
        (
            "layernorm_rows_backward",
            vec![
                shaped("x", Array, C, &["rows", "cols"]),
                shaped("weight", Array, C, &["cols"]),
                shaped("grad_out", Array, C, &["rows", "cols"]),
                shaped("grad_x", DisjointArray, C, &["rows", "cols"]),
                shaped("mean", DisjointArray, C, &["rows"]),
                shaped("rstd", DisjointArray, C, &["rows"]),
                param("eps", Scalar, F32),
            ],
        ),
        (
            "layernorm_rows_backward_affine",
            vec![
                shaped("x", Array, C, &["rows", "cols"]),
                shaped("grad_out", Array, C, &["rows", "cols"]),
                shaped("mean", Array, C, &["rows"]),
                shaped("rstd", Array, C, &["rows"]),
                shaped("grad_weight", DisjointArray, C, &["cols"]),
                shaped("grad_bias", DisjointArray, C, &["cols"]),
            ],
        ),
        (
            "reduce_blocks_f32",
            vec![param("x", Slice, F32), param("partial", DisjointSlice, F32)],
        ),
        (
            "histogram_global",
            vec![param("x", Slice, U32), param("bins", AtomicSlice, U32)],
        ),
        (
            "scan_blocks_u32",
            vec![param("x", Slice, U32), param("out", DisjointSlice, U32)],
        ),
    ] {
        assert_eq!(descriptor(entry).params, want, "{entry}");
    }
    // sgemm: one instance per tuned tile height (the first, 128, the hand pick).
    for (entry, elem, out, rows) in [
        ("sgemm_128", F32, F32, 128),
        ("sgemm_64", F32, F32, 64),
        ("sgemm_256", F32, F32, 256),
        ("gemm_bf16", Bf16, F32, 128),
        ("gemm_bf16_bf16", Bf16, Bf16, 128),
    ] {
        let d = descriptor(entry);
        assert_eq!(
            d.params,
            [
                of(elem, shaped("a", Array, C, &["m", "k"])),
                of(elem, shaped("b", Array, C, &["k", "n"])),
                of(out, shaped("c", DisjointArray, C, &["m", "n"])),
            ]
        );
        assert_eq!(d.launch_bounds.map(|b| b.max_threads), Some(256));
        assert_eq!(
            d.launch,
            Some(LaunchPolicy::Tiles {
                over: "c".into(),
                block: [256, 1, 1],
                tile: [128, rows, 1]
            })
        );
    }
    let d = descriptor("softmax_rows");
    assert_eq!(
        d.params,
        [
            shaped("x", Array, C, &["rows", "cols"]),
            shaped("out", DisjointArray, C, &["rows", "cols"]),
        ]
    );
    assert_eq!(d.launch_bounds.map(|b| b.max_threads), Some(512));
    // Both row kernels: a plain call's block stops at 256 threads, where a row of
    // 16384 columns takes the 64-element register cache, two blocks an SM (rows.rs);
    // one block per row unless tuned to fewer, which walk the rows.
    for entry in ["softmax_rows", "layernorm_rows"] {
        let d = descriptor(entry);
        assert_eq!(d.launch_bounds.map(|b| b.max_threads), Some(512), "{entry}");
        assert_eq!(
            d.launch,
            Some(LaunchPolicy::BlockPerRow {
                over: "out".into(),
                cols: None,
                block: 256,
                blocks_per_sm: 0,
            }),
            "{entry}"
        );
        let tuned = d.tune.expect("tuned").launch;
        let lists: Vec<(&str, &[u32])> = tuned
            .iter()
            .map(|t| (t.param.as_str(), &t.values[..]))
            .collect();
        assert_eq!(
            lists,
            [
                ("block", &[64, 128, 256, 512][..]),
                ("blocks_per_sm", &[0, 8, 16, 32][..])
            ],
            "{entry}"
        );
    }
    // The backward kernels: parameter names pair them with their forward kernels
    // (pyoxide.torch), and #[shapes] sizes every output from the inputs.
    // transpose: one instance per element type and tuned tile height, each launching
    // its own tiles.
    for (name, ty) in [("f32", F32), ("f64", F64), ("u32", U32)] {
        for rows in [64, 32] {
            let d = descriptor(&format!("transpose_{name}_{rows}"));
            assert_eq!(d.name, "transpose");
            assert_eq!(
                d.params,
                [
                    of(ty, shaped("x", Array, C, &["rows", "cols"])),
                    of(ty, shaped("out", DisjointArray, C, &["cols", "rows"])),
                ]
            );
            let tiles = LaunchPolicy::Tiles {
                over: "x".into(),
                block: [32, 8, 1],
                tile: [64, rows, 1],
            };
            assert_eq!(d.launch, Some(tiles));
        }
    }
    let d = descriptor("activate");
    assert_eq!(
        d.params,
        [
            param("x", Slice, F32),
            param("coeffs", Slice, F32),
            param("activation", Scalar, U32),
            param("out", DisjointSlice, F32),
        ]
    );
    assert!(!d.is_unsafe);
}

#[test]
fn vecadd() {
    let d = descriptor("vecadd");
    assert_eq!(d.name, "vecadd");
    assert!(d.instance.is_empty());
    assert_eq!(
        d.params,
        [
            param("a", ParamKind::Slice, ScalarType::F32),
            param("b", ParamKind::Slice, ScalarType::F32),
            param("c", ParamKind::DisjointSlice, ScalarType::F32),
        ]
    );
    assert!(!d.is_unsafe);
    assert_eq!(d.launch_bounds, None);
    assert_eq!(
        d.launch,
        Some(LaunchPolicy::Elementwise {
            over: "c".into(),
            per_thread: 4,
            block: 256
        })
    );
}

#[test]
fn launch_policies() {
    let policy = |entry: &str| descriptor(entry).launch.unwrap();
    assert!(matches!(
        policy("scale_f64"),
        LaunchPolicy::Elementwise { per_thread: 2, .. }
    ));
    assert!(matches!(
        policy("reduce_sum_f32"),
        LaunchPolicy::GridStride {
            block: 256,
            blocks_per_sm: 8,
            ..
        }
    ));
    assert!(matches!(
        policy("histogram"),
        LaunchPolicy::GridStride { .. }
    ));
    assert_eq!(
        policy("reduce_blocks_f32"),
        LaunchPolicy::BlockPerElement {
            over: "partial".into(),
            block: 256
        }
    );
    assert_eq!(
        policy("scan_blocks_u32"),
        LaunchPolicy::Segments { over: "out".into() }
    );
    assert_eq!(descriptor("activate").launch, None);
}

#[test]
fn saxpy() {
    let d = descriptor("saxpy");
    assert_eq!(d.name, "saxpy");
    assert_eq!(
        d.params,
        [
            param("a", ParamKind::Scalar, ScalarType::F32),
            param("x", ParamKind::Slice, ScalarType::F32),
            param("y", ParamKind::Slice, ScalarType::F32),
            param("out", ParamKind::DisjointSlice, ScalarType::F32),
        ]
    );
}

#[test]
fn scale_instances() {
    for (entry, value, ty) in [
        ("scale_f32", "f32", ScalarType::F32),
        ("scale_f64", "f64", ScalarType::F64),
    ] {
        let d = descriptor(entry);
        assert_eq!(d.name, "scale");
        assert_eq!(
            d.instance,
            [GenericArg {
                param: "T".into(),
                value: value.into()
            }]
        );
        assert_eq!(
            d.params,
            [
                param("factor", ParamKind::Scalar, ty),
                param("x", ParamKind::Slice, ty),
                param("out", ParamKind::DisjointSlice, ty),
            ]
        );
    }
}

#[test]
fn source_locations_come_from_the_compiler() {
    for d in descriptors() {
        // Kernels live in the crate's modules (`kernels_rs::elementwise` in
        // src/elementwise.rs, `kernels_rs::rows::backward` in src/rows/backward.rs),
        // re-exported at the root.
        let module = d
            .source
            .module
            .strip_prefix("kernels_rs::")
            .expect(&d.entry);
        let file = format!("{}.rs", module.replace("::", "/"));
        assert!(
            d.source.file.ends_with(&format!("src/{file}")),
            "{}",
            d.source.file
        );
        assert_eq!(d.source.line, line_of_fn(&file, &d.name), "{}", d.entry);
    }
}

/// The descriptor section of this test binary holds exactly the statics above: the
/// section, not a list of names, is what the link step reads, so this catches a kernel
/// missing from `descriptors()` as well as a descriptor that does not reach the binary.
#[cfg(target_os = "linux")]
#[test]
fn the_section_holds_every_descriptor() {
    let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
    let section =
        elf_section(&exe, oxide_abi::names::DESCRIPTOR_SECTION).expect("descriptor section");
    // Descriptors are byte arrays with alignment 1, so the section is their JSON texts
    // back to back, in an order of the linker's choosing.
    let mut found = Vec::new();
    let mut stream = serde_json::Deserializer::from_slice(section).into_iter::<serde_json::Value>();
    let mut start = 0;
    while let Some(value) = stream.next() {
        value.unwrap();
        let end = stream.byte_offset();
        found.push(KernelDescriptor::decode(&section[start..end]).unwrap());
        start = end;
    }
    found.sort_by(|a, b| a.entry.cmp(&b.entry));
    let mut expected = descriptors();
    expected.sort_by(|a, b| a.entry.cmp(&b.entry));
    assert_eq!(found, expected);
}

/// The bytes of the named section of a little-endian ELF64 file.
#[cfg(target_os = "linux")]
fn elf_section<'a>(elf: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let u16_at = |at: usize| u16::from_le_bytes(elf[at..at + 2].try_into().unwrap()) as usize;
    let u32_at = |at: usize| u32::from_le_bytes(elf[at..at + 4].try_into().unwrap()) as usize;
    let u64_at = |at: usize| u64::from_le_bytes(elf[at..at + 8].try_into().unwrap()) as usize;
    assert_eq!(&elf[..6], b"\x7fELF\x02\x01", "a little-endian ELF64 file");
    let (shoff, shentsize, shnum, shstrndx) =
        (u64_at(0x28), u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    let header = |i: usize| shoff + i * shentsize;
    let names = u64_at(header(shstrndx) + 24);
    (0..shnum).find_map(|i| {
        let h = header(i);
        let start = names + u32_at(h);
        let len = elf[start..].iter().position(|&b| b == 0)?;
        (&elf[start..start + len] == name.as_bytes())
            .then(|| &elf[u64_at(h + 24)..u64_at(h + 24) + u64_at(h + 32)])
    })
}
