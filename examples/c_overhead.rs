//! The Rust side of the C API's overhead comparison (`scripts/c_overhead.sh` runs it beside
//! `examples/cpp/overhead.cpp`, which does the same through libsuanli): a 1024³ matmul, a
//! small custom-kernel launch, and `predict` on the 10,000 MNIST test images, each timed
//! `--repeat` times (median printed).
//!
//! ```text
//! cargo run --release --example c_overhead -- MODEL [--repeat N]
//! ```

use std::time::Instant;

use suanli::data::Mnist;
use suanli::nn::Sequential;
use suanli::{CustomKernel, Device, Grid, KernelArg, Tensor};

/// The kernel of the launch measurement: one that does almost nothing, so the time is the
/// launch's.
const TOUCH: &str = "struct P { n: u32, a: f32 }
@group(0) @binding(0) var<storage, read_write> y: array<f32>;
@group(0) @binding(1) var<uniform> p: P;
@compute @workgroup_size(256)
fn touch(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < p.n) { y[g.x] = y[g.x] + p.a; }
}";

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn time<T>(repeat: usize, mut f: impl FnMut() -> suanli::Result<T>) -> suanli::Result<f64> {
    f()?; // warm-up: pipelines compiled, buffers pooled
    let mut v = Vec::with_capacity(repeat);
    for _ in 0..repeat {
        let t = Instant::now();
        f()?;
        v.push(t.elapsed().as_secs_f64());
    }
    Ok(median(v))
}

fn run() -> suanli::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let model_path = args.get(1).ok_or_else(|| suanli::Error::InvalidArgument {
        op: "c_overhead",
        name: "MODEL",
        expected: "a model file (mnist_mlp --save PATH)".into(),
        found: "nothing".into(),
    })?;
    let repeat = args
        .iter()
        .position(|a| a == "--repeat")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let dev = Device::open("auto")?;
    let n = 1024;
    let a: Vec<f32> = (0..n * n)
        .map(|i| ((i * 7919) % 101) as f32 / 50.0 - 1.0)
        .collect();
    let ta = Tensor::from_slice(&dev, &a, &[n, n])?;
    let tb = Tensor::from_slice(&dev, &a, &[n, n])?;
    let mm = time(repeat, || {
        let c = ta.matmul(&tb)?;
        dev.synchronize()?;
        Ok(c)
    })?;
    println!("matmul 1024^3: median {:.3} ms", mm * 1e3);
    let k = CustomKernel::new(&dev, "touch", TOUCH, "touch")?;
    let y = Tensor::zeros(&dev, &[256])?;
    let p: [u32; 2] = [256, 1.0f32.to_bits()];
    let launches = 2000;
    let per = time(repeat.min(5), || {
        for _ in 0..launches {
            k.launch(
                &[
                    KernelArg::Tensor(&y),
                    KernelArg::Uniform(bytemuck::bytes_of(&p)),
                ],
                Grid::Elements(256),
            )?;
        }
        dev.synchronize()
    })?;
    println!(
        "launch: median {:.2} us per launch ({launches} launches of a 256-element kernel)",
        per / launches as f64 * 1e6
    );
    let model = Sequential::load(&dev, std::path::Path::new(model_path))?;
    let mnist = Mnist::load()?;
    let x: Vec<f32> = mnist
        .test_images
        .iter()
        .map(|&b| b as f32 * (1.0 / 255.0))
        .collect();
    let rows = mnist.test_labels.len();
    // As suanli_model_predict does: upload, predict, download.
    let pr = time(repeat, || {
        let mut shape = vec![rows];
        shape.extend_from_slice(model.expected_input_shape().unwrap_or(&[784]));
        let t = Tensor::from_slice(&dev, &x, &shape)?;
        model.predict(&t)?.to_vec()
    })?;
    println!("predict {rows} images: median {:.2} ms", pr * 1e3);
    Ok(())
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
