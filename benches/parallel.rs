//! Data-parallel training benchmark: step time and throughput on one device and on two, the
//! bytes moved per step, and the balancer's trace under an artificial 2× slowdown of device 1.
//! On lavapipe both "devices" share the same CPU cores, so no speed-up is expected: this
//! measures the cost of the host round trip and shows the balancer working.
//!
//! ```text
//! cargo bench --bench parallel                    # devices: the test adapter twice
//! cargo bench --bench parallel -- gpu:0,gpu:1     # real GPUs
//! ```

use suanli::data::{Dataset, Mnist};
use suanli::multi::ParallelOptions;
use suanli::nn::{Dense, FitOptions, Loss, Optimizer, Sequential};
use suanli::DeviceGroup;

fn model(dev: &suanli::Device) -> suanli::Result<Sequential> {
    let mut m = Sequential::with_seed(dev, 0);
    m.add(Dense::new(128, "relu").input_dim(784))?;
    m.add(Dense::new(64, "relu"))?;
    m.add(Dense::new(10, "softmax"))?;
    m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)?;
    Ok(m)
}

fn main() -> suanli::Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let list = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_else(|| "auto,auto".into());
    let group = DeviceGroup::parse(&list)?;
    let rows = 12_800;
    let batch = 128;
    let mnist = Mnist::load()?;
    let upload = |d: &suanli::Device| {
        Dataset::from_u8(
            d,
            &mnist.train_images[..rows * 784],
            784,
            1.0 / 255.0,
            &mnist.train_labels[..rows],
        )
    };
    let sets: Vec<Dataset> = group
        .devices()
        .iter()
        .map(upload)
        .collect::<suanli::Result<_>>()?;
    let steps = rows / batch;
    let opts = || FitOptions {
        epochs: 2,
        batch_size: batch,
        ..Default::default()
    };
    println!(
        "MNIST MLP, {rows} rows, global batch {batch}, {steps} steps per epoch; devices: {}",
        group
            .devices()
            .iter()
            .map(|d| d.name().to_string())
            .collect::<Vec<_>>()
            .join(" + ")
    );
    println!(
        "{:<34} {:>12} {:>14} {:>16}",
        "configuration", "step ms", "samples/s", "bytes/step"
    );
    // One device, the ordinary fit (epoch 2: warm).
    let d0 = group.devices()[0].clone();
    let mut m = model(&d0)?;
    let h = m.fit(&sets[0], opts())?;
    let s1 = h.epoch_seconds[1];
    println!(
        "{:<34} {:>12.2} {:>14.0} {:>16}",
        "1 device (fit)",
        1e3 * s1 / steps as f64,
        rows as f64 / s1,
        0
    );
    // One device through the data-parallel path (host round trip, no split).
    let single = DeviceGroup::from_devices(vec![d0.clone()])?;
    let mut m = model(&d0)?;
    let p = m.fit_parallel(&single, &sets[..1], opts(), &ParallelOptions::default())?;
    let s = p.history.epoch_seconds[1];
    println!(
        "{:<34} {:>12.2} {:>14.0} {:>16}",
        "1 device (fit_parallel)",
        1e3 * s / steps as f64,
        rows as f64 / s,
        p.bytes_per_step
    );
    // All devices.
    let mut m = model(&d0)?;
    let p = m.fit_parallel(&group, &sets, opts(), &ParallelOptions::default())?;
    let s = p.history.epoch_seconds[1];
    println!(
        "{:<34} {:>12.2} {:>14.0} {:>16}",
        format!("{} devices (fit_parallel)", group.len()),
        1e3 * s / steps as f64,
        rows as f64 / s,
        p.bytes_per_step * group.len() as u64
    );
    println!(
        "  final shares {:?} (replicas checked bit-identical every epoch)",
        p.shares
            .last()
            .map(|v| v.iter().map(|s| format!("{s:.2}")).collect::<Vec<_>>()),
    );
    // Device 1 slowed 2×: the balancer's trace.
    if group.len() >= 2 {
        let mut slow = vec![1.0; group.len()];
        slow[1] = 2.0;
        let mut m = model(&d0)?;
        let p = m.fit_parallel(
            &group,
            &sets,
            FitOptions {
                epochs: 1,
                ..opts()
            },
            &ParallelOptions {
                slowdown: slow,
                ..Default::default()
            },
        )?;
        println!("balancer trace with device 1 slowed 2× (share of device 1 by step):");
        let line: Vec<String> = p
            .shares
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 5 == 0 || *i + 1 == p.shares.len())
            .map(|(i, s)| format!("{}:{:.2}", i + 1, s[1]))
            .collect();
        println!("  {}", line.join("  "));
    }
    Ok(())
}
