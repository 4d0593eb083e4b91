//! Shared test helpers: the test device, a seeded RNG, tolerance checks, ragged sizes.
#![allow(dead_code)] // each test binary uses a different subset of these helpers

pub mod arrays;
pub mod float64;
pub mod gpt;
pub mod int64;
pub mod layercheck;
pub mod matmul;

use std::sync::OnceLock;

use suanli::Device;

/// The device every test uses: `SUANLI_TEST_DEVICE` if set, else `auto` (lavapipe in CI).
///
/// With `CI` set, a missing adapter fails the test loudly; locally the test is skipped with a
/// visible notice.
pub fn device() -> Option<Device> {
    static DEV: OnceLock<Option<Device>> = OnceLock::new();
    DEV.get_or_init(|| {
        let spec = std::env::var("SUANLI_TEST_DEVICE").unwrap_or_else(|_| "auto".into());
        match Device::open(&spec) {
            Ok(d) => Some(d),
            Err(e) => {
                if std::env::var_os("CI").is_some() {
                    panic!("CI is set but no test device could be opened: {e}");
                }
                eprintln!("NOTICE: skipping GPU tests, no device: {e}");
                None
            }
        }
    })
    .clone()
}

/// A fresh device of the test device's kind, for tests that read pool statistics (the shared
/// device's are moved by tests running in parallel). `None` where `device()` is `None`.
pub fn own_device(memory_limit: Option<u64>) -> Option<Device> {
    device()?;
    let spec = std::env::var("SUANLI_TEST_DEVICE").unwrap_or_else(|_| "auto".into());
    let config = suanli::Config {
        device: Some(spec.parse().unwrap()),
        memory_limit,
        ..suanli::Config::from_env().unwrap()
    };
    Some(Device::with_config(&config).unwrap())
}

/// Gets the test device or returns from the test (with the notice printed once).
#[macro_export]
macro_rules! dev_or_skip {
    () => {
        match common::device() {
            Some(d) => d,
            None => return,
        }
    };
}

/// Relative L2 error `‖out − ref‖ / ‖ref‖` in f64; NaN anywhere gives +∞.
pub fn rel_l2(out: &[f32], reference: &[f64]) -> f64 {
    assert_eq!(out.len(), reference.len(), "length mismatch");
    let mut num = 0.0f64;
    let mut den = 0.0f64;
    for (&o, &r) in out.iter().zip(reference) {
        if !o.is_finite() && r.is_finite() {
            return f64::INFINITY;
        }
        num += (o as f64 - r) * (o as f64 - r);
        den += r * r;
    }
    if den == 0.0 {
        num.sqrt()
    } else {
        (num / den).sqrt()
    }
}

/// Asserts `rel_l2(out, reference) < tol`, reporting the worst element.
pub fn assert_rel_l2(what: &str, out: &[f32], reference: &[f64], tol: f64) {
    let e = rel_l2(out, reference);
    // Written so that NaN (which compares false) fails.
    if e.partial_cmp(&tol) != Some(std::cmp::Ordering::Less) {
        let (worst, diff) = out
            .iter()
            .zip(reference)
            .map(|(&o, &r)| {
                if o.is_nan() {
                    f64::INFINITY
                } else {
                    (o as f64 - r).abs()
                }
            })
            .enumerate()
            .fold(
                (0, -1.0),
                |(bi, bd), (i, d)| if d > bd { (i, d) } else { (bi, bd) },
            );
        panic!(
            "{what}: relative L2 error {e:.3e} >= {tol:.1e}; worst index {worst}: got {} expected {} (|diff| {diff:.3e})",
            out[worst], reference[worst]
        );
    }
}

/// Seeded values in [-1, 1), never all zero.
pub fn random_vec(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = suanli::random::Rng::new(seed);
    (0..n).map(|_| rng.uniform(-1.0, 1.0) as f32).collect()
}

/// Noisy 3-class data in 12 dimensions (not separable, so training keeps moving weights).
pub fn noisy_classes(dev: &Device, n: usize) -> suanli::data::Dataset {
    let mut rng = suanli::random::Rng::new(5);
    let mut x = Vec::with_capacity(n * 12);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let c = i % 3;
        for j in 0..12 {
            x.push((rng.normal() + if j % 3 == c { 0.7 } else { 0.0 }) as f32);
        }
        y.push(c as u32);
    }
    suanli::data::Dataset::from_f32(dev, &x, 12, &y).unwrap()
}

/// A 12-16-8-3 classifier (with dropout on the first layer) for `noisy_classes`.
pub fn small_model(dev: &Device, opt: suanli::nn::Optimizer) -> suanli::nn::Sequential {
    use suanli::nn::{Dense, Loss, Sequential};
    let mut m = Sequential::with_seed(dev, 11);
    m.add(Dense::new(16, "relu").input_dim(12).dropout(0.25))
        .unwrap();
    m.add(Dense::new(8, "tanh")).unwrap();
    m.add(Dense::new(3, "softmax")).unwrap();
    m.compile(opt, Loss::SparseCategoricalCrossentropy).unwrap();
    m
}

/// An adapter description for tests that need no real adapter.
pub fn fake_adapter(
    name: &str,
    vendor_id: u32,
    device_id: u32,
    kind: suanli::DeviceKind,
    backend: suanli::BackendKind,
    pci: &str,
) -> suanli::AdapterDesc {
    use suanli::device::{ComputeFeatures, ComputeLimits};
    suanli::AdapterDesc {
        index: 99,
        gpu_index: None,
        software_index: None,
        backend_index: 99,
        name: name.into(),
        vendor: suanli::Vendor::classify(vendor_id, kind),
        vendor_id,
        device_id,
        kind,
        backend,
        driver: String::new(),
        driver_info: String::new(),
        pci_bus_id: pci.into(),
        limits: ComputeLimits {
            max_buffer_size: 1 << 30,
            max_storage_binding: 1 << 27,
            max_workgroup_storage: 32768,
            max_invocations: 1024,
            max_workgroup_size: [1024, 1024, 64],
            max_workgroups_per_dimension: 65535,
            max_storage_buffers: 8,
            subgroup_size: (32, 32),
            max_loop_iterations: None,
        },
        features: ComputeFeatures::default(),
        coop_matrices: Vec::new(),
    }
}

/// Noisy images of 4 classes, (n, h, w, c) channels-last: each class lights its own quadrant
/// of every channel, plus Gaussian noise.
pub fn images(n: usize, (h, w, c): (usize, usize, usize), seed: u64) -> (Vec<f32>, Vec<u32>) {
    let mut rng = suanli::random::Rng::new(seed);
    let mut x = Vec::with_capacity(n * h * w * c);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let class = (i * 7 + i / 3) % 4;
        for r in 0..h {
            for q in 0..w {
                let quadrant = 2 * (r >= h / 2) as usize + (q >= w / 2) as usize;
                for _ in 0..c {
                    let lit = if quadrant == class { 0.8 } else { 0.0 };
                    x.push((0.5 * rng.normal() + lit) as f32);
                }
            }
        }
        y.push(class as u32);
    }
    (x, y)
}

/// A small convolutional classifier for `images` of (8, 8, 2) with smooth activations and
/// average pooling, so two ways of summing the same gradients compare by rounding only (no
/// kink or maximum to flip): Conv2D(tanh) → AveragePooling2D → Conv2D(tanh, same) →
/// GlobalAveragePooling2D → Dense(softmax); with `batch_norm`, a BatchNormalization after
/// the first convolution.
pub fn smooth_cnn(dev: &Device, seed: u64, batch_norm: bool) -> suanli::nn::Sequential {
    use suanli::nn::{
        AveragePooling2D, BatchNormalization, Conv2D, Dense, GlobalAveragePooling2D, Loss,
        Optimizer, Sequential,
    };
    let mut m = Sequential::with_seed(dev, seed).input_shape(&[8, 8, 2]);
    m.add(Conv2D::new(6, 3).activation("tanh")).unwrap();
    if batch_norm {
        m.add(BatchNormalization::new()).unwrap();
    }
    m.add(AveragePooling2D::new(2)).unwrap();
    m.add(Conv2D::new(8, 3).padding("same").activation("tanh"))
        .unwrap();
    m.add(GlobalAveragePooling2D::new()).unwrap();
    m.add(Dense::new(4, "softmax")).unwrap();
    m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    m
}

/// The value of the first sample of the Prometheus family `name` in `text` whose line contains
/// `has` (`""`: any), labelled (`name{…} v`) or not (`name v`).
pub fn sample(text: &str, name: &str, has: &str) -> Option<f64> {
    text.lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .find(|l| l.contains(has))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}
