//! Several processes through MPI (`cargo test --release --features mpi --test mpi`, with Open
//! MPI or MPICH installed and `mnist_mlp` and `shakespeare_gpt` built with the feature). Each
//! test launches `mpirun -n 2` on this test binary's ignored `mpi_worker` test (which reads its
//! job from the environment) or on the `mnist_mlp` and `shakespeare_gpt` examples, and checks
//! what the processes wrote and how they ended:
//! - two ranks train the same weights as one device (1e-5 relative L2 after 100 steps), and
//!   the two ranks' replicas are bit-identical: an MLP, a small CNN, and a graph that is not a
//!   chain (built with the functional API: a residual block, `Add`, beside a second branch
//!   from the input, `Concatenate`); with batch normalisation the ranks agree on the moving
//!   statistics; and the GPT of tests/gpt.rs (attention, tied embeddings, global clipping);
//! - ranks started with different settings refuse to train, naming the setting;
//! - a rank that returns an error, exits, is killed or hangs makes the other exit non-zero
//!   within 60 s of the fault (timed from the line announcing it, whatever the steps before
//!   it took on this machine), with a message naming it;
//! - after a rank is killed, the last checkpoint resumes exactly;
//! - `shakespeare_gpt --mpi` (built with the feature too) prints and saves on rank 0 only, and
//!   its two ranks, drawing their own windows on the device, train what one process trains.
#![cfg(feature = "mpi")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use suanli::data::Dataset;
use suanli::multi::mpi::Mpi;
use suanli::multi::{DeviceGroup, Exchange, ParallelOptions};
use suanli::nn::{
    Add, Call, Concatenate, Dense, FitOptions, Input, Loss, Model, Optimizer, Sequential,
};
use suanli::random::Rng;

/// Synthetic classification rows (4 classes, 20 features).
fn rows(n: usize) -> (Vec<f32>, Vec<u32>) {
    let mut rng = Rng::new(31);
    let mut x = Vec::with_capacity(n * 20);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let c = (i * 7 + i / 3) % 4;
        for j in 0..20 {
            x.push((rng.normal() + if j % 4 == c { 0.7 } else { 0.0 }) as f32);
        }
        y.push(c as u32);
    }
    (x, y)
}

/// The model of the equality test: smooth activations, so the comparison after 100 steps
/// measures rounding, not which side of a ReLU's kink a pre-activation within 1e-7 of zero
/// fell on (see docs/SCALING.md: with ReLU, such a flip makes some runs differ by 1e-4..4e-3).
fn model(dev: &suanli::Device) -> Sequential {
    let mut m = Sequential::with_seed(dev, 9);
    m.add(Dense::new(48, "tanh").input_dim(20)).unwrap();
    m.add(Dense::new(24, "gelu")).unwrap();
    m.add(Dense::new(4, "softmax")).unwrap();
    m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    m
}

/// The graph of the graph job, on the rows of the MLP: a residual block beside a second
/// branch from the input, so gradients meet where the branches fork (at `h` and at the input)
/// and pass through both merges,
/// `x → Dense(tanh) = h → Dense(gelu) → Add(h, ·) ┐`
/// `x → Dense(sigmoid) ───────────────────────────┴ Concatenate → Dense(softmax)`.
/// Smooth activations, as [`model`].
fn graph_model(dev: &suanli::Device) -> Model {
    let x = Input::new(&[20]);
    let h = Dense::new(32, "tanh").call(&x).unwrap();
    let r = Dense::new(32, "gelu").call(&h).unwrap();
    let s = Add::new().call_on(&[&h, &r]).unwrap();
    let b = Dense::new(12, "sigmoid").call(&x).unwrap();
    let c = Concatenate::new(-1).call_on(&[&s, &b]).unwrap();
    let y = Dense::new(4, "softmax").call(&c).unwrap();
    let mut m = Model::with_seed(dev, 9).build(&[&x], &[&y]).unwrap();
    m.compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    m
}

/// 100 steps of 128 rows.
const ROWS: usize = 12_800;
const BATCH: usize = 128;

fn weights(m: &Sequential, path: &Path) -> Vec<f32> {
    m.save(path).unwrap();
    tensors(path)
}

/// Every tensor of a safetensors file, by name, concatenated (the header's metadata order is
/// not fixed, so files of equal models are compared by their tensors).
fn tensors(path: &Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut names = st.names();
    names.sort();
    names
        .iter()
        .flat_map(|n| bytemuck::pod_collect_to_vec::<u8, f32>(st.tensor(n).unwrap().data()))
        .collect()
}

fn out_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("suanli-mpi-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// What a job wrote and how it ended, with the moment each output line arrived (measured
/// from the job's start), so a test can time what happened after an event in the output
/// instead of assuming how long the work before it takes.
struct Job {
    out: Output,
    lines: Vec<(Duration, String)>,
    took: Duration,
}

impl Job {
    /// When the first line containing `needle` arrived.
    fn first(&self, needle: &str) -> Option<Duration> {
        self.lines
            .iter()
            .find(|(_, l)| l.contains(needle))
            .map(|(t, _)| *t)
    }
}

/// `mpirun -n 2` on `program args`, with the settings a root CI container needs, bounded by
/// mpirun's own job timeout.
fn mpirun(program: &Path, args: &[&str], env: &[(&str, &str)]) -> Job {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    // One job at a time: jobs sharing the cores would stretch each other past the deadlines.
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let mut cmd = Command::new("mpirun");
    cmd.args([
        "-n",
        "2",
        "--oversubscribe",
        "--bind-to",
        "none",
        "--timeout",
        "240",
    ])
    .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
    .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    .env("OMPI_MCA_btl_base_warn_component_unused", "0");
    for (k, v) in env {
        cmd.env(k, v).args(["-x", k]);
    }
    cmd.arg(program)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let t = Instant::now();
    let mut child = cmd
        .spawn()
        .expect("mpirun not found: install Open MPI (apt-get install openmpi-bin libopenmpi-dev)");
    // Each stream is read line by line on its own thread, every line stamped as it arrives.
    let read = |r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut raw = Vec::new();
            let mut lines = Vec::new();
            let mut r = BufReader::new(r);
            let mut line = Vec::new();
            while r.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
                lines.push((t.elapsed(), String::from_utf8_lossy(&line).into_owned()));
                raw.append(&mut line);
            }
            (raw, lines)
        })
    };
    let so = read(Box::new(child.stdout.take().unwrap()));
    let se = read(Box::new(child.stderr.take().unwrap()));
    let status = child.wait().expect("waiting for mpirun");
    let took = t.elapsed();
    let (stdout, mut lines) = so.join().unwrap();
    let (stderr, more) = se.join().unwrap();
    lines.extend(more);
    lines.sort_by_key(|(t, _)| *t);
    Job {
        out: Output {
            status,
            stdout,
            stderr,
        },
        lines,
        took,
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs this test binary's `mpi_worker` on two ranks with `job`.
fn worker(job: &str, dir: &Path) -> Output {
    let exe = std::env::current_exe().unwrap();
    let d = dir.to_str().unwrap();
    mpirun(
        &exe,
        &[
            "--exact",
            "mpi_worker",
            "--ignored",
            "--nocapture",
            "--test-threads",
            "1",
        ],
        &[("SUANLI_TEST_MPI_JOB", job), ("SUANLI_TEST_MPI_OUT", d)],
    )
    .out
}

/// The `mnist_mlp` example built with the feature, next to this test binary.
fn mnist_mlp() -> PathBuf {
    example("mnist_mlp")
}

/// An example built with the feature, next to this test binary.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let p = exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("examples")
        .join(name);
    assert!(
        p.exists(),
        "{} is missing: cargo build --release --features mpi --example {name}",
        p.display()
    );
    p
}

/// One rank of a job, under mpirun: `cargo test` never runs it (ignored); the tests below
/// launch it.
#[test]
#[ignore = "launched by the other tests under mpirun"]
fn mpi_worker() {
    let job = std::env::var("SUANLI_TEST_MPI_JOB").expect("SUANLI_TEST_MPI_JOB");
    let out = PathBuf::from(std::env::var("SUANLI_TEST_MPI_OUT").expect("SUANLI_TEST_MPI_OUT"));
    let mut mpi = Mpi::init().unwrap();
    let rank = mpi.rank();
    let dev = common::own_device(None).expect("a test device");
    let (data, mut m) = match job.as_str() {
        "cnn" | "bn" => (cnn_data(&dev), common::smooth_cnn(&dev, 4, job == "bn")),
        "gpt" => gpt_job(&dev),
        _ => {
            let (x, y) = rows(ROWS);
            let m = match job.as_str() {
                "graph" => graph_model(&dev),
                _ => model(&dev),
            };
            (Dataset::from_f32(&dev, &x, 20, &y).unwrap(), m)
        }
    };
    let group = DeviceGroup::from_devices(vec![dev.clone()]).unwrap();
    let batch = match job.as_str() {
        "mismatch" if rank == 1 => 64,
        "cnn" | "bn" => CNN_BATCH,
        "gpt" => GPT_BATCH,
        _ => BATCH,
    };
    let result = m.fit_distributed(
        &group,
        &[data],
        FitOptions {
            epochs: 1,
            batch_size: batch,
            ..Default::default()
        },
        &ParallelOptions::default(),
        &mut mpi,
    );
    match result {
        Ok(_) => {
            weights(&m, &out.join(format!("rank{rank}.safetensors")));
        }
        Err(e) => std::fs::write(out.join(format!("rank{rank}.err")), e.to_string()).unwrap(),
    }
}

#[test]
fn two_ranks_train_the_weights_of_one_device() {
    let Some(dev) = common::device() else {
        return;
    };
    let dir = out_dir("equal");
    let o = worker("equal", &dir);
    assert!(o.status.success(), "{}", text(&o));
    let got = tensors(&dir.join("rank0.safetensors"));
    let r1 = tensors(&dir.join("rank1.safetensors"));
    assert!(
        got.iter()
            .map(|v| v.to_bits())
            .eq(r1.iter().map(|v| v.to_bits())),
        "the two ranks' replicas differ"
    );
    // The same global batches on one device.
    let (x, y) = rows(ROWS);
    let data = Dataset::from_f32(&dev, &x, 20, &y).unwrap();
    let mut m = model(&dev);
    m.fit(
        &data,
        FitOptions {
            epochs: 1,
            batch_size: BATCH,
            ..Default::default()
        },
    )
    .unwrap();
    let want = weights(&m, &dir.join("single.safetensors"));
    let reference: Vec<f64> = want.iter().map(|&v| v as f64).collect();
    let rel = common::rel_l2(&got, &reference);
    eprintln!("two ranks vs one device after 100 steps: relative L2 {rel:e}");
    assert!(
        rel < 1e-5,
        "two ranks vs one device after 100 steps: relative L2 {rel:e}"
    );
    // And training moved the weights (the comparison is not of two untouched models).
    let init = weights(&model(&dev), &dir.join("init.safetensors"));
    let moved: f64 = init
        .iter()
        .zip(&want)
        .map(|(a, b)| ((a - b) as f64).powi(2))
        .sum::<f64>()
        .sqrt();
    assert!(moved > 1e-2, "training barely moved the weights ({moved})");
}

/// A graph that is not a chain (a residual block and a second branch, merged) trains on two
/// ranks as on one device, as the MLP does.
#[test]
fn two_ranks_train_a_graph_model_like_one_device() {
    let Some(dev) = common::device() else {
        return;
    };
    let dir = out_dir("graph");
    let o = worker("graph", &dir);
    assert!(o.status.success(), "{}", text(&o));
    let got = tensors(&dir.join("rank0.safetensors"));
    let r1 = tensors(&dir.join("rank1.safetensors"));
    assert!(
        got.iter()
            .map(|v| v.to_bits())
            .eq(r1.iter().map(|v| v.to_bits())),
        "the two ranks' replicas differ"
    );
    let (x, y) = rows(ROWS);
    let data = Dataset::from_f32(&dev, &x, 20, &y).unwrap();
    let mut m = graph_model(&dev);
    // The model is the graph, not a chain that happens to have merge layers.
    let summary = m.summary();
    assert!(
        summary.contains("Add") && summary.contains("Concatenate"),
        "{summary}"
    );
    m.fit(
        &data,
        FitOptions {
            epochs: 1,
            batch_size: BATCH,
            ..Default::default()
        },
    )
    .unwrap();
    let want = weights(&m, &dir.join("single.safetensors"));
    let rel = common::rel_l2(&got, &want.iter().map(|&v| v as f64).collect::<Vec<_>>());
    eprintln!("a graph model on two ranks vs one device after 100 steps: relative L2 {rel:e}");
    assert!(
        rel < 1e-5,
        "a graph model on two ranks vs one device after 100 steps: relative L2 {rel:e}"
    );
    let init = weights(&graph_model(&dev), &dir.join("init.safetensors"));
    let moved: f64 = init
        .iter()
        .zip(&want)
        .map(|(a, b)| ((a - b) as f64).powi(2))
        .sum::<f64>()
        .sqrt();
    assert!(moved > 1e-2, "training barely moved the weights ({moved})");
}

/// The GPT job: tests/gpt.rs's small GPT (tied embeddings, AdamW, global clipping) on 40
/// steps of 8 windows.
const GPT_BATCH: usize = 8;

fn gpt_job(dev: &suanli::Device) -> (Dataset, Model) {
    let text = common::gpt::text();
    let m = common::gpt::gpt(dev, text.tokenizer().vocab_size());
    (common::gpt::windows(dev, &text, 40 * GPT_BATCH, 1), m)
}

/// The GPT (attention, layer norms, a matrix shared by the embedding and the output
/// projection, clipping over every gradient) trains on two ranks as on one device.
#[test]
fn two_ranks_train_the_gpt_like_one_device() {
    let Some(dev) = common::device() else {
        return;
    };
    let dir = out_dir("gpt");
    let o = worker("gpt", &dir);
    assert!(o.status.success(), "{}", text(&o));
    let got = tensors(&dir.join("rank0.safetensors"));
    let r1 = tensors(&dir.join("rank1.safetensors"));
    assert!(
        got.iter()
            .map(|v| v.to_bits())
            .eq(r1.iter().map(|v| v.to_bits())),
        "the two ranks' replicas differ"
    );
    let (data, mut m) = gpt_job(&dev);
    let init = weights(&m, &dir.join("init.safetensors"));
    m.fit(
        &data,
        FitOptions {
            epochs: 1,
            batch_size: GPT_BATCH,
            ..Default::default()
        },
    )
    .unwrap();
    let want = weights(&m, &dir.join("single.safetensors"));
    let rel = common::rel_l2(&got, &want.iter().map(|&v| v as f64).collect::<Vec<_>>());
    eprintln!("the GPT on two ranks vs one device after 40 steps: relative L2 {rel:e}");
    assert!(
        rel < 1e-5,
        "the GPT on two ranks vs one device after 40 steps: relative L2 {rel:e}"
    );
    let moved: f64 = init
        .iter()
        .zip(&want)
        .map(|(a, b)| ((a - b) as f64).powi(2))
        .sum::<f64>()
        .sqrt();
    assert!(moved > 1e-2, "training barely moved the weights ({moved})");
}

/// `shakespeare_gpt --mpi` on two ranks: rank 0 alone prints and saves, and the two ranks,
/// each drawing its rows' windows of every global batch on its device, train the weights
/// the example trains in one process on the whole batches (the windows follow from the
/// seed, the step and the row, whoever draws them).
#[test]
fn the_gpt_example_trains_on_two_ranks_like_one_process() {
    if common::device().is_none() {
        return;
    }
    let dir = out_dir("gpt-example");
    let p = |f: &str| dir.join(f).to_str().unwrap().to_string();
    let small = [
        "--iters",
        "6",
        "--eval-interval",
        "3",
        "--eval-batches",
        "1",
        "--batch-size",
        "6",
        "--block",
        "16",
        "--layers",
        "1",
        "--heads",
        "2",
        "--width",
        "32",
        "--sample",
        "0",
    ];
    let (two, one) = (p("two.safetensors"), p("one.safetensors"));
    let args: Vec<&str> = ["--mpi", "--save", &two]
        .iter()
        .chain(&small)
        .copied()
        .collect();
    let o = mpirun(&example("shakespeare_gpt"), &args, &[]).out;
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    for line in ["iter     3:", "iter     6:", "saved "] {
        assert_eq!(
            t.matches(line).count(),
            1,
            "'{line}' not printed once:\n{t}"
        );
    }
    let o = Command::new(example("shakespeare_gpt"))
        .args(["--save", &one])
        .args(small)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let (got, want) = (tensors(Path::new(&two)), tensors(Path::new(&one)));
    let rel = common::rel_l2(&got, &want.iter().map(|&v| v as f64).collect::<Vec<_>>());
    eprintln!("shakespeare_gpt on two ranks vs one process after 6 steps: relative L2 {rel:e}");
    assert!(rel < 1e-5, "two ranks vs one process: relative L2 {rel:e}");
}

/// The images of the CNN jobs: 30 steps of 32, (8, 8, 2) each.
const CNN_ROWS: usize = 960;
const CNN_BATCH: usize = 32;

fn cnn_data(dev: &suanli::Device) -> Dataset {
    let (x, y) = common::images(CNN_ROWS, (8, 8, 2), 7);
    Dataset::from_f32(dev, &x, 128, &y)
        .unwrap()
        .with_sample_shape(&[8, 8, 2])
        .unwrap()
}

/// A convolutional network trains on two ranks as on one device (smooth activations and
/// average pooling, as the MLP test).
#[test]
fn two_ranks_train_a_cnn_like_one_device() {
    let Some(dev) = common::device() else {
        return;
    };
    let dir = out_dir("cnn");
    let o = worker("cnn", &dir);
    assert!(o.status.success(), "{}", text(&o));
    let got = tensors(&dir.join("rank0.safetensors"));
    let r1 = tensors(&dir.join("rank1.safetensors"));
    assert!(
        got.iter()
            .map(|v| v.to_bits())
            .eq(r1.iter().map(|v| v.to_bits())),
        "the two ranks' replicas differ"
    );
    let mut m = common::smooth_cnn(&dev, 4, false);
    m.fit(
        &cnn_data(&dev),
        FitOptions {
            epochs: 1,
            batch_size: CNN_BATCH,
            ..Default::default()
        },
    )
    .unwrap();
    let want = weights(&m, &dir.join("single.safetensors"));
    let rel = common::rel_l2(&got, &want.iter().map(|&v| v as f64).collect::<Vec<_>>());
    eprintln!("a CNN on two ranks vs one device after 30 steps: relative L2 {rel:e}");
    assert!(
        rel < 1e-5,
        "a CNN on two ranks vs one device: relative L2 {rel:e}"
    );
}

/// With batch normalisation each rank normalises with its own rows' statistics; the moving
/// statistics are averaged over the ranks every epoch, so both ranks end with the same bits,
/// moving statistics included.
#[test]
fn two_ranks_agree_on_batch_norm_statistics() {
    if common::device().is_none() {
        return;
    }
    let dir = out_dir("bn");
    let o = worker("bn", &dir);
    assert!(o.status.success(), "{}", text(&o));
    let r0 = tensors(&dir.join("rank0.safetensors"));
    let r1 = tensors(&dir.join("rank1.safetensors"));
    assert!(
        r0.iter()
            .map(|v| v.to_bits())
            .eq(r1.iter().map(|v| v.to_bits())),
        "the two ranks' weights or moving statistics differ"
    );
}

#[test]
fn ranks_started_differently_refuse_to_train() {
    if common::device().is_none() {
        return;
    }
    let dir = out_dir("mismatch");
    let o = worker("mismatch", &dir);
    assert!(o.status.success(), "{}", text(&o));
    for r in 0..2 {
        let e = std::fs::read_to_string(dir.join(format!("rank{r}.err")))
            .unwrap_or_else(|_| panic!("rank {r} trained anyway:\n{}", text(&o)));
        assert!(
            e.contains("disagree on the batch size: rank 0 has 128, rank 1 has 64"),
            "rank {r}: {e}"
        );
    }
}

/// A rank failing `kind` at step 120 of 200 makes the job end non-zero within 60 s, and the
/// output names rank 1.
fn fault(kind: &str, names: &[&str]) {
    if common::device().is_none() {
        return;
    }
    let job = mpirun(
        &mnist_mlp(),
        &[
            "--mpi",
            "--epochs",
            "2",
            "--batch-size",
            "128",
            "--train-rows",
            "12800",
            "--quiet",
            "--fault-rank",
            "1",
            "--fault-step",
            "120",
            "--fault",
            kind,
        ],
        &[("SUANLI_MPI_TIMEOUT", "10")],
    );
    let o = &job.out;
    let t = text(o);
    // The deadline runs from the fault, not from the job's start: how long the 120 steps
    // before it take depends on the machine. `error` is injected by the engine, whose error
    // names `fail_at_step`; the other kinds are announced by the example's trigger.
    let needle = if kind == "error" {
        "fail_at_step"
    } else {
        "injected fault"
    };
    let at = job
        .first(needle)
        .unwrap_or_else(|| panic!("{kind}: the fault was never injected (no '{needle}'):\n{t}"));
    let after = job.took.saturating_sub(at);
    eprintln!(
        "{kind}: fault at {at:.1?}, the job ended {after:.1?} later with {}",
        o.status
    );
    assert!(!o.status.success(), "{kind}: the job succeeded:\n{t}");
    assert!(
        after < Duration::from_secs(60),
        "{kind}: the job took {after:?} after the fault to end"
    );
    assert!(
        names.iter().any(|n| t.contains(n)),
        "{kind}: no message names rank 1 (looked for {names:?}):\n{t}"
    );
}

#[test]
fn a_rank_that_returns_an_error_stops_the_other() {
    fault("error", &["error: rank 1 failed: fit_parallel: device"]);
}

#[test]
fn a_rank_that_hangs_is_named_by_the_other() {
    fault("hang", &["error: rank 1 failed: it stopped answering"]);
}

#[test]
fn a_rank_that_exits_ends_the_job() {
    // mpirun names the process it saw exit: `[[job,1],1]` is rank 1.
    fault("exit", &[",1],1]", "rank 1 failed"]);
}

#[test]
fn a_killed_rank_ends_the_job_and_its_checkpoint_resumes_exactly() {
    fault("kill", &["process rank 1", "rank 1 failed"]);
    let dir = out_dir("resume");
    let p = |f: &str| dir.join(f).to_str().unwrap().to_string();
    let base = [
        "--mpi",
        "--batch-size",
        "128",
        "--train-rows",
        "12800",
        "--quiet",
    ];
    let run = |extra: &[&str]| {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        mpirun(&mnist_mlp(), &args, &[("SUANLI_MPI_TIMEOUT", "10")]).out
    };
    // Uninterrupted: 2 epochs.
    let full = p("full.safetensors");
    let o = run(&["--epochs", "2", "--save", &full]);
    assert!(o.status.success(), "{}", text(&o));
    // Killed in epoch 2 (step 120 of 200), then resumed from epoch 1's checkpoint.
    let ck = p("run.ckpt");
    let o = run(&[
        "--epochs",
        "2",
        "--checkpoint",
        &ck,
        "--fault-rank",
        "1",
        "--fault-step",
        "120",
        "--fault",
        "kill",
    ]);
    assert!(!o.status.success(), "{}", text(&o));
    let resumed = p("resumed.safetensors");
    let o = run(&["--epochs", "2", "--resume", &ck, "--save", &resumed]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("Resuming from") && t.contains("after epoch 1"),
        "{t}"
    );
    let (a, b) = (tensors(Path::new(&full)), tensors(Path::new(&resumed)));
    assert!(
        a.iter()
            .map(|v| v.to_bits())
            .eq(b.iter().map(|v| v.to_bits())),
        "resuming from the checkpoint did not continue exactly"
    );
}
