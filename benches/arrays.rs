//! Array benchmark (`suanli::array`): a fused expression of ten elementwise operations over
//! 16M float32 values against the same ten run one by one (a temporary each, as NumPy
//! does), as time and GB/s (the fused pass reads 4 and writes 4 bytes a value); a reduction;
//! matmul through arrays; a sort of 2^24 keys; FFTs of 2^20 (and on a GPU 2^24) points;
//! `solve` (4096² on a GPU); and the host cost of queueing an operation on a tiny array, beside
//! the dispatch floor (an operation that runs and is waited for). Fused and unfused alternate
//! within each round (this machine's speed drifts by ±25%); medians of rounds.
//!
//! ```text
//! cargo bench --bench arrays            # the table (16M values)
//! cargo bench --bench arrays -- tiny    # one round, 1M values (CI's smoke run)
//! ```
//! NumPy's side of the same expression: `bindings/python/bench/arrays_vs_numpy.py`.

use std::time::Instant;

use suanli::array::fft::Norm;
use suanli::array::{Array, DType};
use suanli::Device;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The ten operations of the benchmark (the same as the fusion test's and the NumPy
/// script's); `each` runs every step as its own kernel.
fn ten(x: &Array, each: bool) -> suanli::Result<Array> {
    let step = |a: Array| -> suanli::Result<Array> {
        if each {
            a.eval()?;
        }
        Ok(a)
    };
    let mut a = step(x.mul_scalar(1.5)?)?;
    a = step(a.add_scalar(0.25)?)?;
    a = step(a.tanh()?)?;
    a = step(a.mul(x)?)?;
    a = step(a.sub_scalar(0.5)?)?;
    a = step(a.exp()?)?;
    a = step(a.sqrt()?)?;
    a = step(a.maximum_scalar(0.5)?)?;
    a = step(a.div_scalar(3.0)?)?;
    a = step(a.log1p()?)?;
    a.eval()?;
    Ok(a)
}

fn timed(dev: &Device, f: impl FnOnce() -> suanli::Result<()>) -> suanli::Result<f64> {
    dev.synchronize()?;
    let t = Instant::now();
    f()?;
    dev.synchronize()?;
    Ok(t.elapsed().as_secs_f64())
}

fn main() -> suanli::Result<()> {
    let tiny = std::env::args().any(|a| a == "tiny");
    let rounds = if tiny { 1 } else { 5 };
    let n: usize = if tiny { 1 << 20 } else { 1 << 24 };
    let dev = Device::open(&std::env::var("SUANLI_DEVICE").unwrap_or_else(|_| "auto".into()))?;
    println!(
        "device: {} ({}, {})",
        dev.name(),
        dev.info().kind,
        dev.info().backend
    );
    let x = Array::linspace(&dev, -2.0, 2.0, n, true, DType::Float32)?.copy()?;
    // Warm: compile both forms once.
    ten(&x, false)?;
    ten(&x, true)?;
    let (mut fused, mut unfused, mut sums) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        fused.push(timed(&dev, || ten(&x, false).map(|_| ()))?);
        unfused.push(timed(&dev, || ten(&x, true).map(|_| ()))?);
        sums.push(timed(&dev, || x.sum(None, false)?.eval())?);
    }
    let (f, u, s) = (median(fused), median(unfused), median(sums));
    let gb = (8 * n) as f64 / 1e9;
    println!(
        "{:<44} {:>10} {:>10}",
        "elementwise, 10 operations", "ms", "GB/s"
    );
    println!(
        "{:<44} {:>10.2} {:>10.2}",
        format!("fused (one kernel), {n} float32"),
        f * 1e3,
        gb / f
    );
    println!(
        "{:<44} {:>10.2} {:>10.2}",
        "unfused (ten kernels, a temporary each)",
        u * 1e3,
        10.0 * gb / u
    );
    println!("{:<44} {:>10.2}", "fused / unfused time", f / u);
    println!(
        "{:<44} {:>10.2} {:>10.2}",
        "sum of all values (reads 4 B a value)",
        s * 1e3,
        (4 * n) as f64 / 1e9 / s
    );

    let m = if tiny { 256 } else { 1024 };
    let a = Array::linspace(&dev, -1.0, 1.0, m * m, true, DType::Float32)?
        .reshape(&[Some(m), Some(m)])?;
    // Warm: tune the matmul kernels and compile the NT variant the transposed view takes.
    a.matmul(&a.matrix_transpose()?)?.eval()?;
    let mut mm = Vec::new();
    for _ in 0..rounds {
        mm.push(timed(&dev, || a.matmul(&a.matrix_transpose()?)?.eval())?);
    }
    let t = median(mm);
    println!(
        "{:<44} {:>10.2} {:>10.1}",
        format!("matmul {m}x{m} @ its transpose (GFLOP/s)"),
        t * 1e3,
        2.0 * (m * m * m) as f64 / 1e9 / t
    );

    // Sorting 2^24 keys (2^16 tiny): argsort of random float32 values.
    let ns = if tiny { 1 << 16 } else { 1 << 24 };
    let keys = suanli::array::random::Generator::new(&dev, 1).random(&[ns])?;
    keys.argsort(0, false)?.eval()?;
    let mut st = Vec::new();
    for _ in 0..rounds.min(3) {
        st.push(timed(&dev, || keys.sort(0, false)?.eval())?);
    }
    let t = median(st);
    println!(
        "{:<44} {:>10.2} {:>10.1}",
        format!("sort {ns} float32 keys (Mkeys/s)"),
        t * 1e3,
        ns as f64 / 1e6 / t
    );

    // FFT: complex64 transforms of 2^20 and 2^24 points (2^16 tiny; 2^24 only on a GPU, where
    // lavapipe would take seconds a round), as time and GFLOP/s by the usual 5·n·log2(n).
    let sizes: Vec<u32> = if tiny {
        vec![16]
    } else if dev.is_gpu() {
        vec![20, 24]
    } else {
        vec![20]
    };
    for bits in sizes {
        let nf = 1usize << bits;
        let mut g = suanli::array::random::Generator::new(&dev, 3);
        let re = g.random(&[nf])?;
        let sig = re.astype(DType::Complex64)?.copy()?;
        sig.fft(None, -1, Norm::Backward)?.eval()?;
        let mut ft = Vec::new();
        for _ in 0..rounds.min(3) {
            ft.push(timed(&dev, || sig.fft(None, -1, Norm::Backward)?.eval())?);
        }
        let t = median(ft);
        println!(
            "{:<44} {:>10.2} {:>10.1}",
            format!("fft 2^{bits} complex64 (GFLOP/s, 5n log2 n)"),
            t * 1e3,
            5.0 * nf as f64 * bits as f64 / 1e9 / t
        );
    }

    // solve: one right-hand side against a well-conditioned matrix (the identity plus a
    // small random part), 4096² on a GPU (the issue's row), 1024² here, 256² tiny.
    let ns = if tiny {
        256
    } else if dev.is_gpu() {
        4096
    } else {
        1024
    };
    let mut g = suanli::array::random::Generator::new(&dev, 4);
    let a = Array::eye(&dev, ns, ns, 0, DType::Float32)?
        .add(
            &g.uniform(-0.5, 0.5, &[ns, ns])?
                .div_scalar((ns as f64).sqrt())?,
        )?
        .copy()?;
    let b = g.uniform(-1.0, 1.0, &[ns, 1])?.copy()?;
    a.solve(&b)?.eval()?;
    let mut sv = Vec::new();
    for _ in 0..rounds.min(3) {
        sv.push(timed(&dev, || a.solve(&b)?.eval())?);
    }
    let t = median(sv);
    println!(
        "{:<44} {:>10.2} {:>10.1}",
        format!("solve {ns}x{ns}, one column (GFLOP/s, 2n³/3)"),
        t * 1e3,
        2.0 * (ns as f64).powi(3) / 3.0 / 1e9 / t
    );

    // Host cost of an operation: queued (an expression node, no device work) and run (one
    // dispatch, submitted and waited for), on an array of 8 values.
    let small = Array::from_f32(&dev, &[1.0; 8], &[8])?;
    let reps = if tiny { 2_000 } else { 20_000 };
    let t = Instant::now();
    for _ in 0..reps {
        std::hint::black_box(small.add_scalar(1.0)?);
    }
    let queued = t.elapsed().as_secs_f64() / reps as f64;
    let runs = reps / 20;
    let t = Instant::now();
    for _ in 0..runs {
        let y = small.add_scalar(1.0)?;
        y.eval()?;
        dev.synchronize()?;
    }
    let floor = t.elapsed().as_secs_f64() / runs as f64;
    println!(
        "{:<44} {:>10.2}",
        "µs to queue an operation (8 values)",
        queued * 1e6
    );
    println!(
        "{:<44} {:>10.2}",
        "µs to run and wait for one (dispatch floor)",
        floor * 1e6
    );
    Ok(())
}
