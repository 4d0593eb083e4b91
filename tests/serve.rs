//! A training process's own /metrics (`nn::MetricsServer`, feature `serve`): scraped from a
//! callback at an epoch's end (the event, not a timer) and after `fit`, its numbers checked
//! against the history, its text against `promtool check metrics` (required in CI).
#![cfg(feature = "serve")]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;

use suanli::nn::{
    Callback, Dense, EpochEnd, FitOptions, History, Loss, MetricsServer, Optimizer, Sequential,
};

fn get(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut t = String::new();
    s.read_to_string(&mut t).unwrap();
    t.split_once("\r\n\r\n").unwrap().1.to_string()
}

fn value(text: &str, name: &str) -> Option<f64> {
    common::sample(text, name, "")
}

/// Scrapes at every epoch's end (after the server's own callback has seen it).
struct Scraper {
    addr: String,
    seen: Vec<String>,
}

impl Callback for Scraper {
    fn on_epoch_end(&mut self, _e: &EpochEnd, _h: &History) -> bool {
        self.seen.push(get(&self.addr));
        true
    }
}

#[test]
fn training_metrics_follow_the_run_and_pass_promtool() {
    let dev = dev_or_skip!();
    let train = common::noisy_classes(&dev, 200);
    let mut model = Sequential::with_seed(&dev, 3);
    model.add(Dense::new(16, "relu").input_dim(12)).unwrap();
    model.add(Dense::new(3, "softmax")).unwrap();
    model
        .compile(Optimizer::adam(), Loss::SparseCategoricalCrossentropy)
        .unwrap();
    let mut server = MetricsServer::start("127.0.0.1:0", &dev).unwrap();
    let mut scraper = Scraper {
        addr: server.address().to_string(),
        seen: Vec::new(),
    };
    let h = model
        .fit(
            &train,
            FitOptions {
                epochs: 3,
                batch_size: 16,
                validation_split: 0.2,
                callbacks: vec![&mut server, &mut scraper],
                ..Default::default()
            },
        )
        .unwrap();
    // 160 training rows in batches of 16: 10 steps an epoch.
    assert_eq!(scraper.seen.len(), 3);
    for (e, text) in scraper.seen.iter().enumerate() {
        assert_eq!(
            value(text, "suanli_train_epochs_total"),
            Some(e as f64 + 1.0),
            "{text}"
        );
        assert_eq!(
            value(text, "suanli_train_steps_total"),
            Some(10.0 * (e as f64 + 1.0))
        );
        let loss = value(text, "suanli_train_loss").unwrap();
        assert!((loss - h.loss[e]).abs() < 1e-12, "{loss} vs {}", h.loss[e]);
        let vl = value(text, "suanli_train_validation_loss").unwrap();
        assert!((vl - h.val_loss[e]).abs() < 1e-12);
        assert!(value(text, "suanli_train_samples_per_second").unwrap() > 0.0);
    }
    let text = get(server.address());
    assert!(value(&text, "suanli_memory_in_use_bytes").unwrap() > 0.0);
    assert!(
        text.contains("suanli_memory_in_use_by_kind_bytes{")
            && text.contains("kind=\"parameters\""),
        "{text}"
    );
    promtool_accepts(&text);
    // A port in use is a typed error naming it.
    let e = MetricsServer::start(server.address(), &dev)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains(server.address()), "{e}");
}

/// `promtool check metrics` finds nothing wrong with `text` (required in CI).
fn promtool_accepts(text: &str) {
    let promtool = std::process::Command::new("promtool")
        .arg("--version")
        .output()
        .is_ok();
    assert!(
        promtool || std::env::var_os("CI").is_none(),
        "promtool missing: CI installs prometheus"
    );
    if promtool {
        let mut c = std::process::Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        let out = c.wait_with_output().unwrap();
        let msg = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && msg.trim().is_empty(),
            "promtool: {msg}"
        );
    }
}

/// Trains a small model on two devices of `group` under a governor whose first device runs
/// hot (simulated, in virtual time), with `server` as a callback; the governor afterwards.
fn governed_run(
    server: &mut MetricsServer,
    group: &suanli::multi::DeviceGroup,
) -> suanli::telemetry::Governor {
    use std::sync::{Arc, Mutex};
    use suanli::config::Limits;
    use suanli::multi::ParallelOptions;
    use suanli::telemetry::{Governor, Thermal, ThermalSensor, VirtualTime};
    let data: Vec<_> = group
        .devices()
        .iter()
        .map(|d| common::noisy_classes(d, 512))
        .collect();
    let devs: Vec<_> = [110.0, 60.0]
        .iter()
        .map(|f| Arc::new(Mutex::new(Thermal::new(35.0, *f, 30.0, 80.0, 700.0))))
        .collect();
    let clock = VirtualTime::new(devs.clone(), std::time::Duration::from_secs(10));
    let mut gov = Governor::with_pace(Box::new(clock));
    for (i, d) in devs.iter().enumerate() {
        // A power cap above what the device can draw: reported, never binding.
        let limits = Limits {
            max_temperature_c: Some(80.0),
            power_cap_w: Some(1000.0),
        };
        gov.add(
            &format!("sim:{i}"),
            "simulated",
            Box::new(ThermalSensor(d.clone())),
            limits,
        )
        .unwrap();
    }
    let mut model = common::small_model(&group.devices()[0], Optimizer::adam());
    model
        .fit_parallel(
            group,
            &data,
            FitOptions {
                epochs: 3,
                batch_size: 8,
                validation_split: 0.125,
                governor: Some(&mut gov),
                callbacks: vec![server],
                ..Default::default()
            },
            &ParallelOptions {
                simulated_rates: Some(vec![2000.0, 2000.0]),
                ..Default::default()
            },
        )
        .unwrap();
    gov
}

/// A governed group: the governor's series and each device's share appear, and pass promtool.
#[test]
fn governor_and_shares_are_exported() {
    use suanli::multi::DeviceGroup;
    let (Some(a), Some(b)) = (common::own_device(None), common::own_device(None)) else {
        return;
    };
    let group = DeviceGroup::from_devices(vec![a, b]).unwrap();
    let mut server = MetricsServer::start("127.0.0.1:0", &group.devices()[0]).unwrap();
    let gov = governed_run(&mut server, &group);
    let text = get(server.address());
    let r = gov.reports();
    assert_eq!(
        value(&text, "suanli_governor_duty_ratio"),
        Some(r[0].duty),
        "{text}"
    );
    assert!(r[0].duty < 1.0);
    assert_eq!(
        value(&text, "suanli_governor_lowered_total"),
        Some(r[0].lowered as f64)
    );
    assert_eq!(
        value(&text, "suanli_governor_temperature_limit_celsius"),
        Some(80.0)
    );
    assert_eq!(
        value(&text, "suanli_governor_temperature_celsius"),
        r[0].temperature_c
    );
    assert!(r[0].temperature_c.is_some_and(|t| t > 70.0), "{:?}", r[0]);
    assert_eq!(value(&text, "suanli_governor_power_watts"), r[0].power_w);
    assert_eq!(
        value(&text, "suanli_governor_power_cap_watts"),
        Some(1000.0)
    );
    let share = value(&text, "suanli_train_device_share_ratio").unwrap();
    assert!(share < 0.45, "the hot device's exported share {share}");
    assert!(text.contains("replica=\"1\""), "{text}");
    promtool_accepts(&text);
}

/// Seven jobs on `group`, the fourth failing, with the group's counters on `server`.
fn run_jobs(server: &MetricsServer, group: &suanli::multi::DeviceGroup) {
    use suanli::multi::Job;
    let stats = group.job_stats();
    server.add_source(move |e| stats.render(e));
    let jobs: Vec<Job<usize>> = (0..7).map(|i| Job::new(i, 1 << 20)).collect();
    let out = group.map(jobs, |dev, i| {
        if i == 3 {
            return Err(suanli::Error::InvalidArgument {
                op: "job",
                name: "i",
                expected: "not 3".into(),
                found: "3".into(),
            });
        }
        let t = suanli::Tensor::full(dev, &[1024], i as f32)?;
        Ok(t.sum(0)?.to_vec()?[0])
    });
    assert_eq!(out.iter().filter(|r| r.is_err()).count(), 1);
}

/// A process running the job scheduler serves its counters through the same server.
#[test]
fn job_scheduler_counters_are_exported() {
    use suanli::multi::DeviceGroup;
    let (Some(a), Some(b)) = (common::own_device(None), common::own_device(None)) else {
        return;
    };
    let group = DeviceGroup::from_devices(vec![a, b]).unwrap();
    let server = MetricsServer::start("127.0.0.1:0", &group.devices()[0]).unwrap();
    run_jobs(&server, &group);
    let text = get(server.address());
    let sum = |name: &str| -> f64 {
        text.lines()
            .filter(|l| l.starts_with(&format!("{name}{{")))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
            .sum()
    };
    assert_eq!(sum("suanli_jobs_finished_total"), 6.0, "{text}");
    assert_eq!(sum("suanli_jobs_failed_total"), 1.0, "{text}");
    assert!(sum("suanli_jobs_busy_seconds_total") > 0.0);
    assert!(
        text.contains("suanli_jobs_queued 0\n") && text.contains("suanli_jobs_running 0\n"),
        "{text}"
    );
    promtool_accepts(&text);
}

/// Rank 0 of a made-up two-process run whose other rank mirrors it: its partial sums and
/// messages equal this process's. It counts what it would send (a bucket's values, 4 bytes
/// each), so the exported exchange can be checked without MPI.
struct Twin {
    host: suanli::multi::exchange::HostExchange,
    sent: u64,
    total: u64,
}

impl suanli::multi::exchange::Exchange for Twin {
    fn rank(&self) -> usize {
        0
    }
    fn ranks(&self) -> usize {
        2
    }
    fn start(&mut self, bucket: usize, parts: Vec<Vec<f32>>) -> suanli::Result<()> {
        self.sent += 4 * parts.first().map_or(0, |p| p.len() as u64);
        let twice: Vec<Vec<f32>> = parts.iter().chain(&parts).cloned().collect();
        self.host.start(bucket, twice)
    }
    fn finish(&mut self, bucket: usize) -> suanli::Result<suanli::multi::exchange::Combined> {
        self.host.finish(bucket)
    }
    fn all_gather(&mut self, bytes: Vec<u8>) -> suanli::Result<Vec<Vec<u8>>> {
        Ok(vec![bytes.clone(), bytes])
    }
    fn fail(&mut self, _: &str) {}
    fn take_stats(&mut self) -> suanli::multi::exchange::ExchangeStats {
        self.total += self.sent;
        suanli::multi::exchange::ExchangeStats {
            bytes_sent: std::mem::take(&mut self.sent),
            ..self.host.take_stats()
        }
    }
}

/// Trains as rank 0 of a [`Twin`] run with `server` as a callback; the bytes the exchange
/// reported sending.
fn twin_run(server: &mut MetricsServer, dev: &suanli::Device) -> u64 {
    use suanli::multi::{DeviceGroup, ParallelOptions};
    let group = DeviceGroup::from_devices(vec![dev.clone()]).unwrap();
    let data = vec![common::noisy_classes(dev, 256)];
    let mut twin = Twin {
        host: Default::default(),
        sent: 0,
        total: 0,
    };
    let mut model = common::small_model(dev, Optimizer::adam());
    model
        .fit_distributed(
            &group,
            &data,
            FitOptions {
                epochs: 2,
                batch_size: 16,
                callbacks: vec![server],
                ..Default::default()
            },
            &ParallelOptions::default(),
            &mut twin,
        )
        .unwrap();
    twin.total + twin.sent
}

/// Several processes: the bytes and time of the gradient exchange, as counters.
#[test]
fn a_two_process_run_exports_its_exchange() {
    let dev = dev_or_skip!();
    let mut server = MetricsServer::start("127.0.0.1:0", &dev).unwrap();
    let sent = twin_run(&mut server, &dev);
    let text = get(server.address());
    assert!(sent > 0);
    // One process's exchange has no device labels: `name value`.
    let plain =
        |name: &str| -> f64 { value(&text, name).unwrap_or_else(|| panic!("no {name}:\n{text}")) };
    let got = plain("suanli_train_exchange_sent_bytes_total");
    assert!(
        (got - sent as f64).abs() <= 1e-6 * sent as f64,
        "exported {got}, the exchange sent {sent}"
    );
    let secs = plain("suanli_train_exchange_seconds_total");
    assert!(secs >= 0.0 && secs.is_finite());
    promtool_accepts(&text);
}

/// Every series `docs/grafana/suanli-training.json` queries is one this server exports, seen
/// on one server that took part in a two-process run, ran jobs and trained a governed group.
#[test]
fn the_training_dashboard_queries_only_exported_series() {
    use suanli::multi::DeviceGroup;
    let (Some(a), Some(b)) = (common::own_device(None), common::own_device(None)) else {
        return;
    };
    let group = DeviceGroup::from_devices(vec![a, b]).unwrap();
    let mut server = MetricsServer::start("127.0.0.1:0", &group.devices()[0]).unwrap();
    // The last run's shares and validation are the ones served: the group's run goes last.
    twin_run(&mut server, &group.devices()[0]);
    run_jobs(&server, &group);
    governed_run(&mut server, &group);
    let text = get(server.address());
    let dash = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/grafana/suanli-training.json"
    ))
    .unwrap();
    let mut used: Vec<String> = Vec::new();
    let mut rest = dash.as_str();
    while let Some(i) = rest.find("suanli_") {
        let name: String = rest[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        rest = &rest[i + name.len()..];
        used.push(name);
    }
    used.sort();
    used.dedup();
    assert!(used.len() >= 20, "{used:?}");
    let missing: Vec<_> = used
        .iter()
        .filter(|n| !text.contains(&format!("# TYPE {n} ")))
        .collect();
    assert!(
        missing.is_empty(),
        "the dashboard queries series the server does not export: {missing:?}\n{text}"
    );
}
