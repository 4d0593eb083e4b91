//! Prints how long each matmul variant takes to compile (first dispatch) and run at 512³.
//! Run with `MESA_SHADER_CACHE_DISABLE=true` to see cold compile times on lavapipe.
use std::time::Instant;
use suanli::kernels::matmul::{record_with, time_variant, Activation, Layout, MatmulArgs, Variant};
use suanli::{Device, Tensor};

fn main() -> suanli::Result<()> {
    let dev = Device::open("auto")?;
    let n = 512u32;
    let a = Tensor::rand_uniform(&dev, &[512, 512], -1.0, 1.0, 1)?;
    let b = Tensor::rand_uniform(&dev, &[512, 512], -1.0, 1.0, 2)?;
    let c = Tensor::empty(&dev, &[512, 512])?;
    for v in ["naive", "tiled", "sg8x8", "sg8x16", "sg8x32", "sg8x64"] {
        let v = Variant::parse(v).unwrap();
        let args = MatmulArgs { a: a.buffer(), b: b.buffer(), bias: None, c: c.buffer(), m: n, n, k: n, layout: Layout::NN, act: Activation::Linear, accumulate: false };
        let t0 = Instant::now();
        let mut rec = dev.recorder();
        record_with(&mut rec, &args, v)?;
        rec.submit()?;
        dev.synchronize()?;
        let first = t0.elapsed().as_secs_f64();
        let t = time_variant(&dev, &args, v, 3)?;
        println!("{:8} first dispatch {:7.3} s   then {:7.2} ms = {:6.2} GFLOP/s", v.name(), first, t * 1e3, 2.0 * (n as f64).powi(3) / t / 1e9);
    }
    Ok(())
}
