//! Tensors and the memory pool: round trips, creation, pool reuse, memory limits.

mod common;

use suanli::{Error, Tensor};

#[test]
fn round_trip_ragged_sizes() {
    let dev = dev_or_skip!();
    for (i, &n) in [1usize, 7, 65, 1_000_003].iter().enumerate() {
        let data = common::random_vec(n, 100 + i as u64);
        let t = Tensor::from_slice(&dev, &data, &[n]).unwrap();
        assert_eq!(t.shape(), &[n]);
        assert_eq!(t.numel(), n);
        let back = t.to_vec().unwrap();
        assert_eq!(back, data, "n = {n}");
    }
    let t = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let r = t.reshape(&[3, 2]).unwrap();
    assert_eq!(r.shape(), &[3, 2]);
    assert_eq!(r.to_vec().unwrap(), t.to_vec().unwrap());
    assert!(matches!(
        t.reshape(&[4, 2]),
        Err(Error::ShapeMismatch { .. })
    ));
    // Zero-element tensors are allowed and read back empty.
    let e = Tensor::from_slice(&dev, &[], &[0, 5]).unwrap();
    assert!(e.to_vec().unwrap().is_empty());
}

#[test]
fn creation_functions() {
    let dev = dev_or_skip!();
    // Poison a buffer, drop it so the pool hands it back, then check zeros/full overwrite it.
    for &n in &[1usize, 7, 65, 1000, 70_001] {
        drop(Tensor::from_slice(&dev, &vec![f32::NAN; n], &[n]).unwrap());
        let z = Tensor::zeros(&dev, &[n]).unwrap();
        assert!(z.to_vec().unwrap().iter().all(|&x| x == 0.0), "zeros n={n}");
        drop(Tensor::from_slice(&dev, &vec![f32::NAN; n], &[n]).unwrap());
        let f = Tensor::full(&dev, &[n], -2.5).unwrap();
        assert!(f.to_vec().unwrap().iter().all(|&x| x == -2.5), "full n={n}");
    }
    let a = Tensor::rand_uniform(&dev, &[1000], -0.5, 0.5, 7)
        .unwrap()
        .to_vec()
        .unwrap();
    let b = Tensor::rand_uniform(&dev, &[1000], -0.5, 0.5, 7)
        .unwrap()
        .to_vec()
        .unwrap();
    let c = Tensor::rand_uniform(&dev, &[1000], -0.5, 0.5, 8)
        .unwrap()
        .to_vec()
        .unwrap();
    assert_eq!(a, b, "same seed, same values");
    assert_ne!(a, c, "different seed, different values");
    assert!(a.iter().all(|&x| (-0.5..0.5).contains(&x)));
    let mean = a.iter().map(|&x| x as f64).sum::<f64>() / 1000.0;
    assert!(mean.abs() < 0.05, "uniform mean {mean}");
    let n = Tensor::randn(&dev, &[20000], 1.0, 2.0, 3)
        .unwrap()
        .to_vec()
        .unwrap();
    let m = n.iter().map(|&x| x as f64).sum::<f64>() / n.len() as f64;
    let v = n.iter().map(|&x| (x as f64 - m).powi(2)).sum::<f64>() / n.len() as f64;
    assert!(
        (m - 1.0).abs() < 0.05 && (v.sqrt() - 2.0).abs() < 0.05,
        "mean {m} std {}",
        v.sqrt()
    );
    assert!(matches!(
        Tensor::from_slice(&dev, &[1.0, 2.0], &[3]),
        Err(Error::ShapeMismatch { .. })
    ));
    assert!(matches!(
        Tensor::rand_uniform(&dev, &[3], 1.0, 1.0, 0),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        Tensor::randn(&dev, &[3], 0.0, -1.0, 0),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        Tensor::empty(&dev, &[usize::MAX, 2]),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn pool_reuses_buffers_and_reports_stats() {
    let Some(dev) = common::own_device(None) else {
        return;
    };
    let s0 = dev.memory_stats();
    assert_eq!((s0.in_use, s0.cached, s0.allocations), (0, 0, 0));
    let a = Tensor::zeros(&dev, &[1000]).unwrap(); // 4000 B -> 4096 bucket
    let s1 = dev.memory_stats();
    assert_eq!(s1.in_use, 4096);
    assert_eq!((s1.misses, s1.hits, s1.allocations), (1, 0, 1));
    drop(a);
    let s2 = dev.memory_stats();
    assert_eq!((s2.in_use, s2.cached), (0, 4096));
    // Same bucket: served from the cache, no new allocation.
    let b = Tensor::zeros(&dev, &[1001]).unwrap();
    let s3 = dev.memory_stats();
    assert_eq!(
        (s3.hits, s3.allocations, s3.in_use, s3.cached),
        (1, 1, 4096, 0)
    );
    assert_eq!(s3.peak_in_use, 4096);
    let c = Tensor::zeros(&dev, &[10_000]).unwrap();
    assert_eq!(dev.memory_stats().peak_in_use, 4096 + 40960);
    drop((b, c));
    assert_eq!(dev.memory_stats().cached, 4096 + 40960);
    dev.empty_cache();
    let s4 = dev.memory_stats();
    assert_eq!((s4.cached, s4.in_use), (0, 0));
    assert_eq!(s4.peak_in_use, 4096 + 40960);
}

#[test]
fn memory_limit_gives_typed_error_with_numbers() {
    let Some(dev) = common::own_device(Some(1 << 20)) else {
        return;
    };
    assert_eq!(dev.memory_stats().limit, Some(1 << 20));
    let a = Tensor::zeros(&dev, &[128 * 1024]).unwrap(); // 512 KiB
    match Tensor::zeros(&dev, &[160 * 1024]) {
        // 640 KiB more would exceed 1 MiB
        Err(Error::OutOfMemory {
            requested,
            in_use,
            limit,
        }) => {
            assert_eq!(requested, 640 * 1024);
            assert_eq!(in_use, 512 * 1024);
            assert_eq!(limit, 1 << 20);
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    // Cached buffers are released to make room rather than failing.
    drop(a);
    assert_eq!(dev.memory_stats().cached, 512 * 1024);
    let b = Tensor::zeros(&dev, &[200 * 1024]).unwrap(); // 800 KiB: fits only if the cache is freed
    assert_eq!(dev.memory_stats().cached, 0);
    assert!(b.to_vec().unwrap().iter().all(|&x| x == 0.0));
}

#[test]
fn beyond_max_buffer_size_is_out_of_memory_not_a_panic() {
    let dev = dev_or_skip!();
    let max = dev.info().limits.max_buffer_size;
    let n = (max / 4 + 1024) as usize;
    match Tensor::empty(&dev, &[n]) {
        Err(Error::OutOfMemory {
            requested, limit, ..
        }) => {
            assert_eq!(requested, n as u64 * 4);
            assert_eq!(limit, max);
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
}
