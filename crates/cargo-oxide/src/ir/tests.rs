use super::*;

const MODULE: &str = r#"target triple = "nvptx64-nvidia-cuda"

@llvm.used = appending global [2 x ptr] [ptr @_RDESC1, ptr @keep_me], section "llvm.metadata"
@_RDESC1 = internal constant [12 x i8] c"{\22name\22:\22x\22}", section ".oxide.kernels", align 1
@_RSH = internal unnamed_addr global [1024 x i8] undef, section ".oxide.shared", align 4
@_RSH2 = internal global <{ [16 x i8] }> zeroinitializer, section ".oxide.shared", align 16
@_RSHx = internal global i32 0, align 4
@keep_me = global i32 1

define void @vecadd(ptr %0, i64 %1) unnamed_addr #1 {
  %3 = getelementptr inbounds nuw float, ptr @_RSH, i64 %1
  store float 1.0, ptr %3, align 4
  store i32 1, ptr @_RSHx, align 4
  store i8 1, ptr getelementptr (i8, ptr @_RSH2, i64 3), align 1
  ret void
}

define internal void @helper() #1 {
  ret void
}

attributes #1 = { convergent nounwind "target-cpu"="sm_30" "target-features"="+ptx60" }
"#;

#[test]
fn descriptors_are_decoded_and_removed() {
    let (descriptors, text) = take_descriptors(MODULE).unwrap();
    assert_eq!(descriptors, vec![br#"{"name":"x"}"#.to_vec()]);
    assert!(!text.contains("_RDESC1"));
    assert!(text.contains(
        "@llvm.used = appending global [1 x ptr] [ptr @keep_me], section \"llvm.metadata\""
    ));
}

#[test]
fn a_used_array_left_empty_is_dropped() {
    let m = "@llvm.used = appending global [1 x ptr] [ptr @d], section \"llvm.metadata\"\n\
             @d = internal constant [2 x i8] c\"{}\", section \".oxide.kernels\", align 1\n";
    let (d, text) = take_descriptors(m).unwrap();
    assert_eq!(d, vec![b"{}".to_vec()]);
    assert!(!text.contains("llvm.used"), "{text}");
}

#[test]
fn c_strings_decode_escapes() {
    assert_eq!(
        decode_c_string(r#"x c"a\22b\5Cc\0A""#).unwrap(),
        b"a\"b\\c\n"
    );
}

#[test]
fn shared_statics_move_to_addrspace_3() {
    let (text, n) = move_shared_statics(MODULE).unwrap();
    assert_eq!(n, 2);
    assert!(
        text.contains("@_RSH = internal addrspace(3) global [1024 x i8] undef, align 4\n"),
        "{text}"
    );
    // Zero initialisers cannot live in shared memory; the static starts undefined.
    assert!(
        text.contains("@_RSH2 = internal addrspace(3) global <{ [16 x i8] }> undef, align 16\n"),
        "{text}"
    );
    assert!(text.contains("ptr addrspacecast (ptr addrspace(3) @_RSH to ptr), i64 %1"));
    assert!(
        text.contains(
            "getelementptr (i8, ptr addrspacecast (ptr addrspace(3) @_RSH2 to ptr), i64 3)"
        )
    );
    // A global whose name starts with the shared one's is left alone.
    assert!(text.contains("store i32 1, ptr @_RSHx, align 4"));
    assert!(text.contains("@_RSHx = internal global i32 0, align 4"));
}

#[test]
fn kernels_get_the_ptx_kernel_convention_and_bounds() {
    let mut kernels = BTreeMap::new();
    kernels.insert(
        "vecadd".to_string(),
        EntryAttrs {
            launch_bounds: Some(LaunchBounds {
                max_threads: 128,
                min_blocks: Some(2),
            }),
            cluster: None,
        },
    );
    let text = mark_kernels(MODULE, &kernels).unwrap();
    assert!(text.contains(
        "define ptx_kernel void @vecadd(ptr %0, i64 %1) unnamed_addr \"nvvm.maxntid\"=\"128\" \"nvvm.minctasm\"=\"2\" #1 {"
    ), "{text}");
    assert!(text.contains("define internal void @helper() #1 {"));
}

#[test]
fn a_described_kernel_missing_from_the_module_is_an_error() {
    let mut kernels = BTreeMap::new();
    kernels.insert("nope".to_string(), EntryAttrs::default());
    let err = mark_kernels(MODULE, &kernels).unwrap_err().to_string();
    assert!(err.contains("nope"), "{err}");
}

#[test]
fn cpu_attributes_are_stripped() {
    let text = strip_cpu_attributes(MODULE);
    assert!(
        text.contains("attributes #1 = { convergent nounwind }"),
        "{text}"
    );
}

#[test]
fn libdevice_need_is_detected() {
    assert!(!needs_libdevice(MODULE));
    assert!(needs_libdevice("declare float @__nv_expf(float)\n"));
}

#[test]
fn types_are_read_whole() {
    assert_eq!(type_prefix("[4 x [2 x i8]] undef"), Some("[4 x [2 x i8]]"));
    assert_eq!(
        type_prefix("<{ [16 x i8] }> zeroinitializer"),
        Some("<{ [16 x i8] }>")
    );
    assert_eq!(type_prefix("i32 0"), Some("i32"));
}

#[test]
fn a_cluster_shape_becomes_the_nvvm_cluster_dim_attribute() {
    let line = "define void @k(ptr %0) unnamed_addr #1 !dbg !7 {\n";
    let mut kernels = BTreeMap::new();
    kernels.insert(
        "k".to_string(),
        EntryAttrs {
            launch_bounds: Some(LaunchBounds {
                max_threads: 128,
                min_blocks: None,
            }),
            cluster: Some([2, 1, 1]),
        },
    );
    let text = mark_kernels(line, &kernels).unwrap();
    assert_eq!(
        text,
        "define ptx_kernel void @k(ptr %0) unnamed_addr \"nvvm.maxntid\"=\"128\" \"nvvm.cluster_dim\"=\"2,1,1\" #1 !dbg !7 {\n"
    );
    // Alone, too, and with a 3-D shape.
    kernels.insert(
        "k".to_string(),
        EntryAttrs {
            launch_bounds: None,
            cluster: Some([2, 2, 2]),
        },
    );
    let text = mark_kernels(line, &kernels).unwrap();
    assert!(
        text.contains("unnamed_addr \"nvvm.cluster_dim\"=\"2,2,2\" #1"),
        "{text}"
    );
}

#[test]
fn bounds_go_before_debug_metadata() {
    let line =
        "define void @k(ptr noundef align 4 %0, { i32, i64 } %1) unnamed_addr #1 !dbg !184 {\n";
    let mut kernels = BTreeMap::new();
    kernels.insert(
        "k".to_string(),
        EntryAttrs {
            launch_bounds: Some(LaunchBounds {
                max_threads: 64,
                min_blocks: None,
            }),
            cluster: None,
        },
    );
    let text = mark_kernels(line, &kernels).unwrap();
    assert_eq!(
        text,
        "define ptx_kernel void @k(ptr noundef align 4 %0, { i32, i64 } %1) unnamed_addr \"nvvm.maxntid\"=\"64\" #1 !dbg !184 {\n"
    );
}

#[test]
fn the_dynamic_shared_array_becomes_an_extern_shared_array() {
    let m = "@__oxide_dynamic_shared = external global [0 x i8], align 1\n\
             define void @k() {\n  store i8 1, ptr @__oxide_dynamic_shared, align 1\n  ret void\n}\n";
    let (text, n) = move_shared_statics(m).unwrap();
    assert_eq!(n, 1);
    assert!(
        text.contains(
            "@__oxide_dynamic_shared = external addrspace(3) global [0 x i8], align 16\n"
        ),
        "{text}"
    );
    assert!(text.contains(
        "store i8 1, ptr addrspacecast (ptr addrspace(3) @__oxide_dynamic_shared to ptr)"
    ));
}

#[test]
fn aligned_dynamic_shared_names_become_the_one_array_with_the_largest_alignment() {
    let m = "@__oxide_dynamic_shared = external global [0 x i8], align 1\n\
             @__oxide_dynamic_shared_a128 = external global [0 x i8], align 1\n\
             @__oxide_dynamic_shared_a256 = external global [0 x i8], align 1\n\
             define void @k() {\n  store i8 1, ptr @__oxide_dynamic_shared_a128, align 1\n  \
             store i8 2, ptr @__oxide_dynamic_shared_a256, align 1\n  ret void\n}\n";
    let (text, n) = move_shared_statics(m).unwrap();
    assert_eq!(n, 1);
    assert_eq!(
        text.matches(" = external addrspace(3) global").count(),
        1,
        "{text}"
    );
    assert!(
        text.contains(
            "@__oxide_dynamic_shared = external addrspace(3) global [0 x i8], align 256\n"
        ),
        "{text}"
    );
    assert!(!text.contains("_a128") && !text.contains("_a256"), "{text}");
    assert_eq!(
        text.matches("addrspacecast (ptr addrspace(3) @__oxide_dynamic_shared to ptr)")
            .count(),
        2,
        "{text}"
    );
}

#[test]
fn slice_pointers_get_what_rust_types_prove() {
    use oxide_abi::descriptor::{ParamDescriptor, SourceLocation};
    let p = |name: &str, kind, ty| {
        ParamDescriptor::new(
            name,
            kind,
            ty,
            kind != ParamKind::Slice && kind != ParamKind::Scalar,
        )
    };
    let d = KernelDescriptor {
        is_unsafe: true,
        ..KernelDescriptor::new(
            "k",
            vec![
                p("a", ParamKind::Scalar, oxide_abi::ScalarType::F32),
                p("x", ParamKind::Slice, oxide_abi::ScalarType::F64),
                p("o", ParamKind::DisjointSlice, oxide_abi::ScalarType::U16),
                p("q", ParamKind::Pointer, oxide_abi::ScalarType::U8),
            ],
            SourceLocation {
                module: "m".into(),
                file: "f".into(),
                line: 1,
            },
        )
    };
    let mut kernels = BTreeMap::new();
    kernels.insert("k".to_string(), param_facts(&d));
    let line = "define void @k(float %0, ptr noundef %1, i64 %2, ptr align 2 %3, i64 %4, ptr %5) unnamed_addr #1 {\n";
    let text = annotate_params(line, &kernels).unwrap();
    assert_eq!(
        text,
        "define void @k(float %0, ptr noalias readonly align 8 noundef %1, i64 %2, \
         ptr noalias align 2 %3, i64 %4, ptr %5) unnamed_addr #1 {\n"
    );
    // A slice the kernel never reads (rustc says `readnone`) does not also get
    // `readonly`: LLVM refuses the pair.
    let unread = "define void @k(float %0, ptr readnone %1, i64 %2, ptr %3, i64 %4, ptr %5) #1 {\n";
    let text = annotate_params(unread, &kernels).unwrap();
    assert!(text.contains("ptr noalias align 8 readnone %1"), "{text}");
    // A descriptor that disagrees with the entry is an error, not a silent mislabel.
    let short = "define void @k(float %0) #1 {\n";
    assert!(annotate_params(short, &kernels).is_err());
}
