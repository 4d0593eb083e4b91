//! Soak run: trains the MNIST MLP for many epochs and prints, after each, the pooled device
//! memory and the process's resident set size. Both must be flat after epoch 2 (everything
//! a step needs is allocated when the plan is built; nothing per step).
//!
//! ```text
//! cargo bench --bench soak                       # 30 epochs at batch 128
//! cargo bench --bench soak -- --epochs 5 --batch-size 32
//! ```

use suanli::data::{Dataset, Mnist};
use suanli::nn::{Dense, FitOptions, History, Loss, Optimizer, Sequential};

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> suanli::Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let epochs = arg("--epochs", 30);
    let batch = arg("--batch-size", 128);
    let dev = suanli::Device::open("auto")?;
    let mnist = Mnist::load()?;
    let train = Dataset::from_u8(
        &dev,
        &mnist.train_images,
        784,
        1.0 / 255.0,
        &mnist.train_labels,
    )?;
    let mut model = Sequential::with_seed(&dev, 0);
    model.add(Dense::new(128, "relu").input_dim(784))?;
    model.add(Dense::new(64, "relu"))?;
    model.add(Dense::new(10, "softmax"))?;
    model.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)?;
    println!("soak: {} epochs at batch {batch} on {}", epochs, dev.name());
    println!(
        "{:>5} {:>8} {:>9} {:>12} {:>11} {:>12} {:>9} {:>8}",
        "epoch", "secs", "loss", "pool in use", "pool cache", "allocations", "RSS MB", "busy"
    );
    let mut rows: Vec<(u64, u64, u64, u64)> = Vec::new();
    let mut cb = |e: usize, h: &History| {
        let s = dev.memory_stats();
        let rss = suanli::telemetry::process_rss().unwrap_or(0);
        println!(
            "{:>5} {:>8.2} {:>9.4} {:>12} {:>11} {:>12} {:>9.1} {:>7.0}%",
            e + 1,
            h.epoch_seconds[e],
            h.loss[e],
            s.in_use,
            s.cached,
            s.allocations,
            rss as f64 / 1048576.0,
            100.0 * h.utilisation[e]
        );
        rows.push((s.in_use, s.cached, s.allocations, rss));
        true
    };
    model.fit(
        &train,
        FitOptions {
            epochs,
            batch_size: batch,
            on_epoch_end: Some(&mut cb),
            ..Default::default()
        },
    )?;
    if rows.len() >= 3 {
        let (a, z) = (rows[1], rows[rows.len() - 1]);
        let pool_flat = (a.0, a.1, a.2) == (z.0, z.1, z.2);
        let rss_growth = z.3 as i64 - a.3 as i64;
        println!(
            "after epoch 2: pool {} ; RSS {:+.2} MB over {} epochs ({:+.1} KB per epoch)",
            if pool_flat { "flat" } else { "CHANGED" },
            rss_growth as f64 / 1048576.0,
            rows.len() - 2,
            rss_growth as f64 / 1024.0 / (rows.len() - 2) as f64
        );
    }
    Ok(())
}
