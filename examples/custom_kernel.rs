//! Runs a user-written WGSL kernel (SAXPY, `y = a·x + y`) on a million elements and checks it
//! against the CPU.
//!
//! ```text
//! cargo run --release --example custom_kernel
//! ```

use std::time::Instant;

use suanli::{CustomKernel, Device, Grid, KernelArg, Tensor};

const SAXPY: &str = r#"
struct Params { n: u32, a: f32 }

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(256)
fn saxpy(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i < p.n) {
        y[i] = p.a * x[i] + y[i];
    }
}
"#;

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    n: u32,
    a: f32,
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> suanli::Result<()> {
    let spec = std::env::args().nth(1).unwrap_or_else(|| "auto".into());
    let dev = Device::open(&spec)?;
    println!(
        "device: {} ({}, {})",
        dev.name(),
        dev.info().kind,
        dev.info().backend
    );

    let n = 1_000_000usize;
    let a = 2.5f32;
    let mut rng = suanli::random::Rng::new(1);
    let x: Vec<f32> = (0..n).map(|_| rng.uniform(-1.0, 1.0) as f32).collect();
    let y: Vec<f32> = (0..n).map(|_| rng.uniform(-1.0, 1.0) as f32).collect();

    let kernel = CustomKernel::new(&dev, "saxpy", SAXPY, "saxpy")?;
    println!(
        "bindings: {:?}",
        kernel
            .bindings()
            .iter()
            .map(|b| (&b.name, b.access))
            .collect::<Vec<_>>()
    );
    let xt = Tensor::from_slice(&dev, &x, &[n])?;
    let yt = Tensor::from_slice(&dev, &y, &[n])?;
    let params = Params { n: n as u32, a };

    let t0 = Instant::now();
    kernel.launch(
        &[
            KernelArg::ReadOnly(&xt),
            KernelArg::Tensor(&yt),
            KernelArg::Uniform(bytemuck::bytes_of(&params)),
        ],
        Grid::Elements(n as u64),
    )?;
    let out = yt.to_vec()?;
    let elapsed = t0.elapsed();

    let mut worst = 0.0f64;
    for i in 0..n {
        let want = a as f64 * x[i] as f64 + y[i] as f64;
        worst = worst.max((out[i] as f64 - want).abs());
    }
    println!(
        "saxpy on {n} elements: {:.2} ms (launch + readback), max |error| vs CPU f64 = {worst:.2e}",
        elapsed.as_secs_f64() * 1e3
    );
    if worst < 1e-6 {
        println!("verified: matches the CPU");
        Ok(())
    } else {
        Err(suanli::Error::InvalidArgument {
            op: "custom_kernel example",
            name: "result",
            expected: "max error < 1e-6".into(),
            found: format!("{worst:e}"),
        })
    }
}
