//! Custom WGSL kernels: SAXPY against the CPU, shader errors with locations, binding checks.

mod common;

use suanli::{CustomKernel, Error, Grid, KernelArg, Tensor};

const SAXPY: &str = r#"
struct Params { n: u32, a: f32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;
@compute @workgroup_size(64)
fn saxpy(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i < p.n) { y[i] = p.a * x[i] + y[i]; }
}
"#;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    a: f32,
}

#[test]
fn saxpy_matches_cpu_on_ragged_sizes() {
    let dev = dev_or_skip!();
    let k = CustomKernel::new(&dev, "saxpy", SAXPY, "saxpy").unwrap();
    assert_eq!(k.workgroup_size(), [64, 1, 1]);
    assert_eq!(k.bindings().len(), 3);
    for (i, &n) in [1usize, 7, 63, 65, 783, 1_000_003].iter().enumerate() {
        let x = common::random_vec(n, 10 + i as u64);
        let y = common::random_vec(n, 20 + i as u64);
        let a = -1.75f32;
        let xt = Tensor::from_slice(&dev, &x, &[n]).unwrap();
        let yt = Tensor::from_slice(&dev, &y, &[n]).unwrap();
        let p = Params { n: n as u32, a };
        k.launch(
            &[
                KernelArg::ReadOnly(&xt),
                (&yt).into(),
                KernelArg::Uniform(bytemuck::bytes_of(&p)),
            ],
            Grid::Elements(n as u64),
        )
        .unwrap();
        let reference: Vec<f64> = x
            .iter()
            .zip(&y)
            .map(|(&x, &y)| a as f64 * x as f64 + y as f64)
            .collect();
        common::assert_rel_l2(
            &format!("saxpy n={n}"),
            &yt.to_vec().unwrap(),
            &reference,
            1e-6,
        );
    }
}

#[test]
fn grid_spills_onto_y_beyond_the_dimension_limit() {
    let dev = dev_or_skip!();
    // 65535 * 64 < n: needs a second row of work-groups.
    let n = 65535 * 64 + 1000;
    let k = CustomKernel::new(&dev, "saxpy", SAXPY, "saxpy").unwrap();
    let xt = Tensor::full(&dev, &[n], 1.0).unwrap();
    let yt = Tensor::full(&dev, &[n], 0.5).unwrap();
    let p = Params {
        n: n as u32,
        a: 2.0,
    };
    k.launch(
        &[
            (&xt).into(),
            (&yt).into(),
            KernelArg::Uniform(bytemuck::bytes_of(&p)),
        ],
        Grid::Elements(n as u64),
    )
    .unwrap();
    let out = yt.to_vec().unwrap();
    assert!(
        out.iter().all(|&v| v == 2.5),
        "first wrong at {:?}",
        out.iter().position(|&v| v != 2.5)
    );
}

#[test]
fn pipelines_are_compiled_once() {
    // A device of its own: other tests compile pipelines on the shared one meanwhile.
    let Some(dev) = common::own_device(None) else {
        return;
    };
    let src = SAXPY.replace("64u", "64u ") + "\n// cache test\n";
    let before = dev.cached_pipelines();
    let _a = CustomKernel::new(&dev, "cache_test", &src, "saxpy").unwrap();
    let mid = dev.cached_pipelines();
    let _b = CustomKernel::new(&dev, "cache_test", &src, "saxpy").unwrap();
    assert_eq!(mid, before + 1);
    assert_eq!(dev.cached_pipelines(), mid);
}

#[test]
fn invalid_wgsl_is_a_shader_error_with_location() {
    let dev = dev_or_skip!();
    let src = "@compute @workgroup_size(1)\nfn main() {\n    let v = undefined_thing;\n}\n";
    match CustomKernel::new(&dev, "bad", src, "main") {
        Err(Error::Shader {
            file,
            line,
            column,
            message,
        }) => {
            assert_eq!(file, "bad");
            assert_eq!(line, 3);
            assert_eq!(column, 13);
            assert!(message.contains("undefined_thing"), "{message}");
        }
        other => panic!("expected Error::Shader, got {other:?}"),
    }
    match CustomKernel::new(&dev, "noentry", SAXPY, "sgemm") {
        Err(Error::Shader { message, .. }) => assert!(message.contains("saxpy"), "{message}"),
        other => panic!("expected Error::Shader, got {other:?}"),
    }
}

#[test]
fn binding_mismatches_are_typed_errors() {
    let dev = dev_or_skip!();
    let k = CustomKernel::new(&dev, "saxpy", SAXPY, "saxpy").unwrap();
    let x = Tensor::full(&dev, &[10], 1.0).unwrap();
    let y = Tensor::full(&dev, &[10], 1.0).unwrap();
    let p = Params { n: 10, a: 1.0 };
    let u = KernelArg::Uniform(bytemuck::bytes_of(&p));
    let expect = |r: suanli::Result<()>, needle: &str| match r {
        Err(Error::BindingMismatch { kernel, message }) => {
            assert_eq!(kernel, "saxpy");
            assert!(
                message.contains(needle),
                "{message:?} should mention {needle:?}"
            );
        }
        other => panic!("expected BindingMismatch ({needle}), got {other:?}"),
    };
    expect(
        k.launch(&[(&x).into(), (&y).into()], Grid::Elements(10)),
        "expected 3 arguments",
    );
    expect(
        k.launch(
            &[(&x).into(), KernelArg::ReadOnly(&y), u],
            Grid::Elements(10),
        ),
        "read_write",
    );
    expect(
        k.launch(&[(&x).into(), u, u], Grid::Elements(10)),
        "storage buffer",
    );
    expect(
        k.launch(&[(&x).into(), (&y).into(), (&x).into()], Grid::Elements(10)),
        "uniform",
    );
    expect(
        k.launch(&[(&y).into(), (&y).into(), u], Grid::Elements(10)),
        "same tensor",
    );
    expect(
        k.launch(
            &[(&x).into(), (&y).into(), KernelArg::Uniform(&[0u8; 4])],
            Grid::Elements(10),
        ),
        "needs 8 bytes",
    );
    // A tensor from another device.
    let other = suanli::Device::open(&dev.info().spec().to_string()).unwrap();
    let z = Tensor::full(&other, &[10], 1.0).unwrap();
    assert!(matches!(
        k.launch(&[(&z).into(), (&y).into(), u], Grid::Elements(10)),
        Err(Error::DeviceMismatch { .. })
    ));
    // Nothing was written by the rejected launches.
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 1.0));
    // The uniform must be last, and group 1 is refused.
    let src = "@group(0) @binding(0) var<uniform> n: u32;\n@group(0) @binding(1) var<storage, read_write> y: array<f32>;\n@compute @workgroup_size(1) fn f() { y[0] = f32(n); }";
    let k2 = CustomKernel::new(&dev, "uniform_first", src, "f").unwrap();
    expect2(k2.launch(
        &[KernelArg::Uniform(&[0u8; 16]), (&y).into()],
        Grid::Workgroups(1, 1, 1),
    ));
    let src = "@group(1) @binding(0) var<storage, read_write> y: array<f32>;\n@compute @workgroup_size(1) fn f() { y[0] = 1.0; }";
    assert!(matches!(
        CustomKernel::new(&dev, "g1", src, "f"),
        Err(Error::Shader { .. })
    ));
}

fn expect2(r: suanli::Result<()>) {
    assert!(matches!(r, Err(Error::BindingMismatch { .. })), "{r:?}");
}
