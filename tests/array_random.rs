//! Random arrays: the device's Philox4x32-10 words against Random123's known-answer vectors
//! and the host reference, reproducibility by seed and stream, and the distributions
//! (uniform, normal, integers) by their moments and chi-square.

mod common;

use suanli::array::random::Generator;
use suanli::array::DType;
use suanli::internals::reference::{philox4x32_10, philox_word};

#[test]
fn host_philox_matches_random123_known_answers() {
    // kat_vectors of Random123 1.09 for philox4x32_10.
    assert_eq!(
        philox4x32_10([0, 0, 0, 0], [0, 0]),
        [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
    );
    assert_eq!(
        philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
        [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
    );
    assert_eq!(
        philox4x32_10(
            [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
            [0xa4093822, 0x299f31d0]
        ),
        [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
    );
}

#[test]
fn device_words_equal_the_reference_and_streams_are_reproducible() {
    let dev = dev_or_skip!();
    let seed = 0x0123_4567_89ab_cdef;
    let mut g = Generator::stream(&dev, seed, 7);
    // Ragged sizes: the last block partial; the counter advances by whole blocks.
    let a = g.bits(&[13]).unwrap().to_f64_vec().unwrap();
    let b = g.bits(&[3, 5]).unwrap().to_f64_vec().unwrap();
    for (i, v) in a.iter().enumerate() {
        assert_eq!(*v as u32, philox_word(seed, 7, 0, i), "word {i}");
    }
    for (i, v) in b.iter().enumerate() {
        assert_eq!(
            *v as u32,
            philox_word(seed, 7, 4, i),
            "second draw, word {i}"
        );
    }
    assert_eq!(g.counter().block, 4 + 4);
    // Same seed and stream: the same values; another stream or seed: others.
    let again = Generator::stream(&dev, seed, 7)
        .bits(&[13])
        .unwrap()
        .to_f64_vec()
        .unwrap();
    assert_eq!(again, a);
    let other = Generator::stream(&dev, seed, 8)
        .bits(&[13])
        .unwrap()
        .to_f64_vec()
        .unwrap();
    assert_ne!(other, a);
    let other = Generator::new(&dev, seed + 1)
        .bits(&[13])
        .unwrap()
        .to_f64_vec()
        .unwrap();
    assert_ne!(other, a);
}

#[test]
fn distributions_have_their_moments() {
    let dev = dev_or_skip!();
    let mut g = Generator::new(&dev, 42);
    let n = 200_000;
    let u = g.uniform(-2.0, 3.0, &[n]).unwrap().to_f64_vec().unwrap();
    assert!(u.iter().all(|&v| (-2.0..3.0).contains(&v)));
    let mean = u.iter().sum::<f64>() / n as f64;
    let var = u.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
    // Mean 0.5 (σ of the mean 5/√12/√n ≈ 0.0032), variance 25/12.
    assert!((mean - 0.5).abs() < 0.015, "uniform mean {mean}");
    assert!((var - 25.0 / 12.0).abs() < 0.03, "uniform variance {var}");
    // Chi-square over 50 equal bins (49 degrees of freedom; 99.9% quantile 85.4).
    let mut bins = [0usize; 50];
    for &v in &u {
        bins[(((v + 2.0) / 5.0) * 50.0) as usize] += 1;
    }
    let e = n as f64 / 50.0;
    let chi: f64 = bins.iter().map(|&c| (c as f64 - e).powi(2) / e).sum();
    assert!(chi < 85.4, "uniform chi-square {chi}");

    let z = g.normal(1.0, 2.0, &[n]).unwrap().to_f64_vec().unwrap();
    let m = z.iter().sum::<f64>() / n as f64;
    let s2 = z.iter().map(|v| (v - m).powi(2)).sum::<f64>() / n as f64;
    let k4 = z.iter().map(|v| ((v - m) / s2.sqrt()).powi(4)).sum::<f64>() / n as f64;
    assert!((m - 1.0).abs() < 0.03, "normal mean {m}");
    assert!((s2 - 4.0).abs() < 0.08, "normal variance {s2}");
    assert!((k4 - 3.0).abs() < 0.1, "normal kurtosis {k4}");
    // The fraction within one σ: 68.27%.
    let within = z.iter().filter(|&&v| (v - 1.0).abs() < 2.0).count() as f64 / n as f64;
    assert!((within - 0.6827).abs() < 0.005, "within one sigma {within}");

    let k = g.integers(-3, 7, &[n], DType::Int8).unwrap();
    assert_eq!(k.dtype(), DType::Int8);
    let k = k.to_f64_vec().unwrap();
    let mut counts = [0usize; 10];
    for &v in &k {
        assert!((-3.0..7.0).contains(&v), "{v}");
        counts[(v + 3.0) as usize] += 1;
    }
    let e = n as f64 / 10.0;
    let chi: f64 = counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum();
    assert!(
        chi < 27.9,
        "integers chi-square {chi} (9 dof, 99.9% quantile 27.9)"
    );
    assert!(g.integers(5, 5, &[1], DType::Int32).is_err());
    assert!(g.integers(0, 300, &[1], DType::UInt8).is_err());
    assert!(g.integers(0, 3, &[1], DType::Float32).is_err());
    assert!(g.normal(0.0, -1.0, &[1]).is_err());
}
