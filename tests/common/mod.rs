//! Shared test helpers: the test device, a seeded RNG, tolerance checks, ragged sizes.
#![allow(dead_code)] // each test binary uses a different subset of these helpers

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
        visible_devices: None,
        memory_limit,
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
