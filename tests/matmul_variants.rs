//! Which matmul kernel runs where, without a device: the tuner's candidates for each reported
//! subgroup range and adapter kind (the table in docs/PERFORMANCE.md), routing of narrow and
//! shallow shapes, names, and how deep a K each kernel reaches under llvmpipe's loop limit.

mod common;

use suanli::config::MatmulPrecision;
use suanli::device::{CoopMatrix, CoopScalar};
use suanli::internals::kernels::matmul_variant::{
    candidates, candidates_with, Block, Tile, Variant, COOP,
};
use suanli::{BackendKind, DeviceKind};

fn adapter(kind: DeviceKind, subgroups: Option<(u32, u32)>, storage: u32) -> suanli::AdapterDesc {
    let mut a = common::fake_adapter("test", 0x10de, 1, kind, BackendKind::Vulkan, "");
    a.features.subgroups = subgroups.is_some();
    a.limits.subgroup_size = subgroups.unwrap_or((0, 0));
    a.limits.max_workgroup_storage = storage;
    a
}

fn names(v: &[Variant]) -> Vec<String> {
    v.iter().map(|v| v.name()).collect()
}

/// An adapter kind, its reported subgroup range, its workgroup memory, and the candidates.
type Row = (DeviceKind, Option<(u32, u32)>, u32, &'static [&'static str]);

#[test]
fn candidates_follow_the_reported_subgroup_sizes() {
    use DeviceKind::{Discrete, Software};
    let table: &[Row] = &[
        // lavapipe: 8 lanes (AVX2), 4 (LP_NATIVE_VECTOR_WIDTH=128), 16 (=512); GL: none.
        // Narrow subgroups have 64-row kernels too.
        (
            Software,
            Some((8, 8)),
            32768,
            &["sg8x16", "sg8x32", "sg8x64"],
        ),
        (
            Software,
            Some((4, 4)),
            32768,
            &["sg4x16", "sg4x32", "sg4x64"],
        ),
        (
            Software,
            Some((16, 16)),
            32768,
            &["sg16x16", "sg16x32", "sg16x64"],
        ),
        (Software, None, 32768, &["rb8x4", "rb8x8", "rb16x8"]),
        // A software adapter whose size varies (WARP: 4-128): no subgroup kernel.
        (
            Software,
            Some((4, 128)),
            32768,
            &["rb8x4", "rb8x8", "rb16x8"],
        ),
        // NVIDIA (32), AMD GCN (64): their subgroup kernels beside the tiles.
        (
            Discrete,
            Some((32, 32)),
            49152,
            &[
                "sg32x16",
                "sg32x32",
                "tiled64x64",
                "tiled128x64",
                "tiled128x128",
                "rb8x8",
            ],
        ),
        (
            Discrete,
            Some((64, 64)),
            65536,
            &[
                "sg64x16",
                "sg64x32",
                "tiled64x64",
                "tiled128x64",
                "tiled128x128",
                "rb8x8",
            ],
        ),
        // A fixed 128 (the widest Vulkan allows).
        (
            Discrete,
            Some((128, 128)),
            32768,
            &[
                "sg128x16",
                "sg128x32",
                "tiled64x64",
                "tiled128x64",
                "tiled128x128",
                "rb8x8",
            ],
        ),
        // AMD RDNA (32-64), Intel (8-32), Metal (4-64), Qualcomm (64-128): sizes vary, so the
        // tiles and the register block.
        (
            Discrete,
            Some((32, 64)),
            65536,
            &["tiled64x64", "tiled128x64", "tiled128x128", "rb8x8"],
        ),
        (
            Discrete,
            Some((64, 128)),
            32768,
            &["tiled64x64", "tiled128x64", "tiled128x128", "rb8x8"],
        ),
        // No subgroups, WebGPU's default 16 KiB of workgroup memory: the 24 KiB tile is out.
        (
            Discrete,
            None,
            16384,
            &["tiled64x64", "tiled128x128", "rb8x8"],
        ),
    ];
    for (kind, sg, storage, want) in table {
        let got = names(&candidates(&adapter(*kind, *sg, *storage)));
        assert_eq!(got, *want, "{kind:?} subgroups {sg:?} storage {storage}");
    }
}

#[test]
fn names_round_trip_and_tiled_means_the_64_tile() {
    for n in Variant::names() {
        let v = Variant::parse(&n).unwrap_or_else(|| panic!("{n} does not parse"));
        if n != "tiled" {
            assert_eq!(v.name(), n);
        }
    }
    assert_eq!(Variant::parse("tiled"), Some(Variant::Tiled(Tile::T64x64)));
    assert_eq!(
        Variant::parse("sg8x32"),
        Some(Variant::Subgroup { size: 8, rows: 32 })
    );
    assert_eq!(Variant::parse("sg12x16"), None);
    assert_eq!(
        Variant::parse("sg8x64"),
        Some(Variant::Subgroup { size: 8, rows: 64 })
    );
    assert_eq!(
        Variant::parse("sg32x64"),
        None,
        "64 rows only for narrow subgroups"
    );
    assert_eq!(
        Variant::parse("sg8narrow"),
        None,
        "routed by shape, not forced"
    );
}

#[test]
fn narrow_and_shallow_products_get_their_kernels() {
    for size in [4, 8, 16, 32, 64, 128] {
        let sg = Variant::Subgroup { size, rows: 32 };
        let narrow = Variant::SubgroupNarrow { size };
        let shallow = Variant::SubgroupShallow { size };
        // At most 16 columns: the narrow kernel, whatever M and K.
        assert_eq!(sg.for_shape(32, 10, 64), narrow);
        assert_eq!(sg.for_shape(60000, 16, 784), narrow);
        // Otherwise K at most 16: the shallow kernel; neither: unchanged.
        assert_eq!(sg.for_shape(32, 64, 10), shallow);
        assert_eq!(sg.for_shape(128, 784, 16), shallow);
        assert_eq!(sg.for_shape(128, 784, 17), sg);
        assert_eq!(sg.for_shape(32, 17, 64), sg);
    }
    // Without subgroups, narrow products go to the register-blocked narrow kernel; 128-row
    // tiles on at most 64 rows to the 64-row tile.
    for v in [
        Variant::Naive,
        Variant::Tiled(Tile::T128x128),
        Variant::Blocked(Block::B16x8),
    ] {
        assert_eq!(v.for_shape(32, 10, 64), Variant::BlockedNarrow);
    }
    assert_eq!(
        Variant::Tiled(Tile::T128x128).for_shape(64, 512, 512),
        Variant::Tiled(Tile::T64x64)
    );
    assert_eq!(
        Variant::Tiled(Tile::T128x64).for_shape(65, 512, 512),
        Variant::Tiled(Tile::T128x64)
    );
    assert_eq!(
        Variant::Blocked(Block::B8x4).for_shape(32, 64, 10),
        Variant::Blocked(Block::B8x4)
    );
}

#[test]
fn on_a_gpu_narrow_products_of_few_rows_stay_wide() {
    use suanli::internals::kernels::matmul_variant::GPU_NARROW_MIN_ROWS;
    let gpu = adapter(DeviceKind::Discrete, Some((32, 32)), 49152);
    let cpu = adapter(DeviceKind::Software, Some((8, 8)), 32768);
    let tiled = Variant::Tiled(Tile::T64x64);
    // The convnet's Dense 1600→10 at batch 128: wide on a GPU, narrow on a CPU adapter.
    assert_eq!(tiled.for_shape_on(128, 10, 1600, &gpu), tiled);
    assert_eq!(
        tiled.for_shape_on(128, 10, 1600, &cpu),
        Variant::BlockedNarrow
    );
    // Rows enough to fill a GPU (a convolution's backward data pass): narrow there too.
    let m = GPU_NARROW_MIN_ROWS;
    assert_eq!(tiled.for_shape_on(m, 1, 288, &gpu), Variant::BlockedNarrow);
    assert_eq!(tiled.for_shape_on(m - 1, 1, 288, &gpu), tiled);
    // A subgroup choice stays its wide subgroup kernel; a 128-row tile on few rows the 64.
    let sg = Variant::Subgroup { size: 32, rows: 32 };
    assert_eq!(sg.for_shape_on(128, 10, 1600, &gpu), sg);
    assert_eq!(
        Variant::Tiled(Tile::T128x128).for_shape_on(32, 10, 64, &gpu),
        Variant::Tiled(Tile::T64x64)
    );
    // Not narrow: the same as for_shape everywhere.
    assert_eq!(
        sg.for_shape_on(128, 784, 16, &gpu),
        Variant::SubgroupShallow { size: 32 }
    );
    assert_eq!(tiled.for_shape_on(128, 784, 512, &gpu), tiled);
}

#[test]
fn kernels_reach_deep_k_under_a_loop_limit() {
    let mut a = adapter(DeviceKind::Software, Some((8, 8)), 32768);
    a.limits.max_loop_iterations = Some(65_535);
    assert_eq!(Variant::Naive.max_k(&a), Some(262_140));
    assert_eq!(Variant::Blocked(Block::B8x8).max_k(&a), Some(262_140));
    assert_eq!(Variant::Tiled(Tile::T64x64).max_k(&a), Some(65_535 * 16));
    assert_eq!(Variant::Tiled(Tile::T128x128).max_k(&a), Some(65_535 * 8));
    assert_eq!(
        Variant::Subgroup { size: 8, rows: 16 }.max_k(&a),
        Some(65_535 * 32)
    );
    assert_eq!(
        Variant::Subgroup { size: 64, rows: 16 }.max_k(&a),
        Some(65_535 * 64)
    );
    a.limits.max_loop_iterations = None;
    assert_eq!(Variant::Naive.max_k(&a), None);
    // Few rows take a kernel no taller than they need.
    let tall = Variant::Subgroup { size: 8, rows: 64 };
    assert_eq!(tall.for_rows(20), Variant::Subgroup { size: 8, rows: 32 });
    assert_eq!(tall.for_rows(10), Variant::Subgroup { size: 8, rows: 16 });
    assert_eq!(tall.for_rows(33), tall);
}

#[test]
fn shape_classes_separate_large_products() {
    use suanli::internals::kernels::matmul_tune::Class;
    // The H200's case: one choice for every size ran 4096³ at 40% of the best variant.
    assert_eq!(Class::of(4096, 4096, 4096), Class::Large);
    assert_eq!(Class::of(2048, 2048, 1024), Class::Large);
    assert_eq!(Class::of(8192, 8192, 8192), Class::Large);
    // Layers' products stay in the default class: small batches, narrow layers, shallow K.
    for (m, n, k) in [
        (2047, 4096, 4096),
        (4096, 2047, 4096),
        (4096, 4096, 1023),
        (256, 512, 512),
        (128, 784, 128),
        (8192, 768, 3072),
    ] {
        assert_eq!(Class::of(m, n, k), Class::Default, "{m}×{n}×{k}");
    }
    assert_ne!(Class::Default.name(), Class::Large.name());
    assert_eq!(Class::ALL.len(), 2);
}

/// An adapter with tensor cores: NVIDIA's report (16×16×16 f16 into f32 and into f16, as an
/// H100's Vulkan driver lists them among others), 32-lane subgroups, f16, 48 KiB.
fn tensor_core_gpu(configs: &[CoopMatrix]) -> suanli::AdapterDesc {
    let mut a = adapter(DeviceKind::Discrete, Some((32, 32)), 49152);
    a.features.shader_f16 = true;
    a.features.cooperative_matrix = true;
    a.coop_matrices = configs.to_vec();
    a
}

fn coop(s: u32, ab: CoopScalar, cr: CoopScalar) -> CoopMatrix {
    CoopMatrix {
        m: s,
        n: s,
        k: s,
        ab,
        cr,
        saturating: false,
    }
}

#[test]
fn tensor_core_kernels_only_where_reported_and_allowed() {
    use CoopScalar::{F16, F32};
    let simt = ["tiled64x64", "tiled128x64", "tiled128x128", "rb8x8"];
    let with = |pre: &[&str]| -> Vec<String> {
        pre.iter()
            .chain(["sg32x16", "sg32x32"].iter())
            .chain(simt.iter())
            .map(|s| s.to_string())
            .collect()
    };
    let nvidia = tensor_core_gpu(&[coop(16, F16, F32), coop(16, F16, F16)]);
    // The adapter table (`examples/devices.rs`) lists what the adapter reports.
    let table = suanli::device::format_table(std::slice::from_ref(&nvidia), None);
    assert!(
        table.contains("coop(16x16x16 f16->f32, 16x16x16 f16->f16)"),
        "{table}"
    );
    // f16 products only when the precision setting allows them.
    assert_eq!(
        names(&candidates_with(&nvidia, MatmulPrecision::Medium)),
        with(&["coop16h"])
    );
    for p in [MatmulPrecision::Highest, MatmulPrecision::High] {
        assert_eq!(names(&candidates_with(&nvidia, p)), with(&[]), "{p:?}");
    }
    // The convolutions' tuner never times them (no im2col twin).
    assert_eq!(names(&candidates(&nvidia)), with(&[]));
    // A report without f16 operands, or with f16 results only: nothing to run.
    for configs in [
        vec![coop(16, CoopScalar::I32, CoopScalar::I32)],
        vec![coop(16, F16, F16)],
        vec![coop(16, F32, F16)],
    ] {
        let a = tensor_core_gpu(&configs);
        assert_eq!(
            names(&candidates_with(&a, MatmulPrecision::Medium)),
            with(&[]),
            "{configs:?}"
        );
    }
    // The configurations without the feature (the device was not created with it), without
    // f16 in shaders, or without subgroups: none.
    let mut a = nvidia.clone();
    a.features.cooperative_matrix = false;
    assert!(!candidates_with(&a, MatmulPrecision::Medium).contains(&COOP[0]));
    let mut a = nvidia.clone();
    a.features.shader_f16 = false;
    assert!(!candidates_with(&a, MatmulPrecision::Medium).contains(&COOP[0]));
    let mut a = nvidia.clone();
    a.features.subgroups = false;
    assert!(!candidates_with(&a, MatmulPrecision::Medium).contains(&COOP[0]));
    // Too little workgroup memory for the 128×128 tile's stages and scratch.
    let mut a = nvidia.clone();
    a.limits.max_workgroup_storage = 16384;
    assert!(!candidates_with(&a, MatmulPrecision::Medium).contains(&COOP[0]));
    // Metal's simdgroup matrices: 8×8 f32 keeps f32 precision, but no tensor-core kernel has
    // run on a GPU yet: opt-in like the f16 ones.
    let apple = tensor_core_gpu(&[coop(8, F32, F32)]);
    assert_eq!(
        names(&candidates_with(&apple, MatmulPrecision::Medium)),
        with(&["coop8f"])
    );
    for p in [MatmulPrecision::Highest, MatmulPrecision::High] {
        assert_eq!(names(&candidates_with(&apple, p)), with(&[]), "{p:?}");
    }
    // Both fragment sizes reported: each its own candidate.
    let both = tensor_core_gpu(&[coop(16, F16, F32), coop(8, F16, F32)]);
    assert_eq!(
        names(&candidates_with(&both, MatmulPrecision::Medium)),
        with(&["coop16h", "coop8h"])
    );
    // A software adapter never reports any; lavapipe's candidates are unchanged.
    let lavapipe = adapter(DeviceKind::Software, Some((8, 8)), 32768);
    assert_eq!(
        candidates_with(&lavapipe, MatmulPrecision::Medium),
        candidates(&lavapipe)
    );
}

#[test]
fn tensor_core_variants_parse_route_and_bound_k() {
    for v in COOP {
        assert_eq!(Variant::parse(&v.name()), Some(v));
        assert!(Variant::names().contains(&v.name()));
        // Convolutions run the shared-memory tile; narrow products the narrow kernel.
        assert_eq!(v.conv_fallback(), Variant::Tiled(Tile::T64x64));
        assert_eq!(v.for_shape(4096, 10, 4096), Variant::BlockedNarrow);
        assert_eq!(v.for_shape(4096, 4096, 4096), v);
    }
    let v = Variant::Coop { s: 16, half: true };
    assert!(v.is_reduced_precision());
    assert!(!Variant::Coop { s: 8, half: false }.is_reduced_precision());
    // 128×128 work-group tiles, K 32 per stage.
    assert_eq!(v.groups(1000, 300), [3, 8, 1]);
    let mut a = adapter(DeviceKind::Software, Some((8, 8)), 32768);
    a.limits.max_loop_iterations = Some(65_535);
    assert_eq!(v.max_k(&a), Some(65_535 * 32));
    // On a GPU a narrow product of few rows stays on the wide kernel (as the tiles do).
    let gpu = tensor_core_gpu(&[]);
    assert_eq!(v.for_shape_on(128, 10, 512, &gpu), v);
}

#[test]
fn matmul_precision_is_one_setting() {
    use std::collections::HashMap;
    use suanli::config::{Config, Overrides};
    let resolve = |env: &[(&str, &str)], file: Option<&str>| {
        let env: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::resolve(&Overrides::default(), &env, file, "suanli.toml")
    };
    assert_eq!(
        resolve(&[], None).unwrap().matmul_precision,
        MatmulPrecision::Highest
    );
    assert_eq!(
        resolve(&[("SUANLI_MATMUL_PRECISION", "medium")], None)
            .unwrap()
            .matmul_precision,
        MatmulPrecision::Medium
    );
    // The environment beats the file.
    let c = resolve(
        &[("SUANLI_MATMUL_PRECISION", "highest")],
        Some("matmul_precision = \"medium\""),
    )
    .unwrap();
    assert_eq!(c.matmul_precision, MatmulPrecision::Highest);
    let c = resolve(&[], Some("matmul_precision = \"medium\"")).unwrap();
    assert!(c.matmul_precision.allows_f16());
    match resolve(&[("SUANLI_MATMUL_PRECISION", "low")], None) {
        Err(suanli::Error::Config { key, reason, .. }) => {
            assert_eq!(key, "SUANLI_MATMUL_PRECISION");
            assert!(reason.contains("highest, high or medium"), "{reason}");
        }
        other => panic!("expected a configuration error, got {other:?}"),
    }
}
