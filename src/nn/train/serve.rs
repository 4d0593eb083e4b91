//! A training process's own `/metrics` (cargo feature `serve`): [`MetricsServer`] is a
//! [`Callback`] that keeps the run's numbers (steps, epochs, loss, accuracy, throughput, step
//! time, validation, the device's pooled memory) and answers Prometheus scrapes from a thread
//! of its own, in the same exposition format as `suanli-smi`
//! ([`crate::telemetry::exposition`]). Updating costs a lock per chunk of steps and per metric
//! read, nothing per step.

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::error::{Error, Result};
use crate::memory::MemoryKind;
use crate::nn::train::options::{Callback, EpochBegin, EpochEnd, History, Progress};
use crate::runtime::Device;
use crate::telemetry::exposition::{Exposition, Kind, Labels};
use crate::telemetry::governor::GovernorReport;

/// More series to render at each scrape (the job scheduler's: [`MetricsServer::add_source`]).
type Sources = Arc<Mutex<Vec<Box<dyn Fn(&mut Exposition) + Send>>>>;

/// What the last events said.
#[derive(Clone, Debug, Default)]
struct State {
    epoch: usize,
    epochs: usize,
    steps_done: u64,
    epochs_done: u64,
    /// Steps of finished epochs (the running epoch's are added as its chunks finish).
    steps_before: u64,
    loss: Option<f64>,
    accuracy: Option<f64>,
    val_loss: Option<f64>,
    val_accuracy: Option<f64>,
    samples_per_second: Option<f64>,
    step_seconds: Option<f64>,
    /// Several devices: spec and share of the batch per device.
    shares: Vec<(String, f64)>,
    /// Several processes: bytes sent and seconds of exchange so far (`None`: one process).
    exchange: Option<(f64, f64)>,
    governor: Vec<GovernorReport>,
}

/// Serves `/metrics` for the training it is a callback of (see the module docs). The server
/// stops when this is dropped.
pub struct MetricsServer {
    state: Arc<Mutex<State>>,
    sources: Sources,
    server: Arc<tiny_http::Server>,
    addr: String,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Listens on `addr` (`127.0.0.1:9836`; port 0 picks a free one: see
    /// [`MetricsServer::address`]) and answers scrapes about training on `device`.
    pub fn start(addr: &str, device: &Device) -> Result<MetricsServer> {
        let server = tiny_http::Server::http(addr).map_err(|e| Error::InvalidArgument {
            op: "MetricsServer::start",
            name: "addr",
            expected: "an address to listen on that is free (host:port)".into(),
            found: format!("{addr}: {e}"),
        })?;
        let server = Arc::new(server);
        let bound = server
            .server_addr()
            .to_ip()
            .map_or_else(|| addr.to_string(), |a| a.to_string());
        let state = Arc::new(Mutex::new(State::default()));
        let sources: Sources = Arc::default();
        let (s, st, dev, src) = (
            server.clone(),
            state.clone(),
            device.clone(),
            sources.clone(),
        );
        let thread = std::thread::Builder::new()
            .name("suanli-metrics".into())
            .spawn(move || {
                for request in s.incoming_requests() {
                    let ok = request.url().split('?').next() == Some("/metrics");
                    let body = if ok {
                        let snapshot = st.lock().map(|g| g.clone()).unwrap_or_default();
                        let mut e = render(&snapshot, &dev);
                        if let Ok(list) = src.lock() {
                            for f in list.iter() {
                                f(&mut e);
                            }
                        }
                        e.finish()
                    } else {
                        "not found: try /metrics\n".to_string()
                    };
                    let ctype = "text/plain; version=0.0.4; charset=utf-8";
                    let header =
                        tiny_http::Header::from_bytes(&b"Content-Type"[..], ctype.as_bytes());
                    let mut response = tiny_http::Response::from_string(body)
                        .with_status_code(if ok { 200 } else { 404 });
                    if let Ok(h) = header {
                        response = response.with_header(h);
                    }
                    if let Err(e) = request.respond(response) {
                        log::warn!("a metrics scrape's connection failed: {e}");
                    }
                }
            })
            .map_err(|e| Error::Internal {
                op: "MetricsServer::start",
                message: format!("cannot start the server's thread: {e}"),
            })?;
        log::info!("training metrics on http://{bound}/metrics");
        Ok(MetricsServer {
            state,
            sources,
            server,
            addr: bound,
            thread: Some(thread),
        })
    }

    /// Adds series rendered at every scrape: a process running the job scheduler serves its
    /// counters with `server.add_source(move |e| stats.render(e))`
    /// (`multi::DeviceGroup::job_stats`).
    pub fn add_source(&self, f: impl Fn(&mut Exposition) + Send + 'static) {
        if let Ok(mut list) = self.sources.lock() {
            list.push(Box::new(f));
        }
    }

    /// The address it listens on (with the port chosen, for port 0).
    pub fn address(&self) -> &str {
        &self.addr
    }

    fn update(&self, f: impl FnOnce(&mut State)) {
        if let Ok(mut g) = self.state.lock() {
            f(&mut g);
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Callback for MetricsServer {
    fn on_epoch_begin(&mut self, e: &EpochBegin) {
        self.update(|s| {
            s.epoch = e.epoch;
            s.epochs = e.epochs;
        });
    }

    fn on_steps(&mut self, _epoch: usize, done: usize) {
        self.update(|s| s.steps_done = s.steps_before + done as u64);
    }

    fn on_progress(&mut self, p: &Progress) -> bool {
        self.update(|s| {
            s.loss = Some(p.loss);
            s.accuracy = p.accuracy;
        });
        true
    }

    fn on_epoch_end(&mut self, e: &EpochEnd, _h: &History) -> bool {
        self.update(|s| {
            s.steps_before += e.steps as u64;
            s.steps_done = s.steps_before;
            s.epochs_done += 1;
            s.loss = Some(e.loss);
            s.accuracy = e.accuracy;
            s.val_loss = e.validation.as_ref().map(|v| v.loss);
            s.val_accuracy = e.validation.as_ref().and_then(|v| v.accuracy);
            s.samples_per_second = Some(e.samples_per_second);
            s.step_seconds = (e.steps > 0).then(|| e.seconds / e.steps as f64);
            s.shares = e.shares.clone();
            if let Some((bytes, secs)) = e.exchange {
                let (b0, s0) = s.exchange.unwrap_or_default();
                let n = e.steps as f64;
                s.exchange = Some((b0 + bytes * n, s0 + secs * n));
            }
        });
        true
    }

    fn on_governor(&mut self, reports: &[GovernorReport]) {
        self.update(|s| s.governor = reports.to_vec());
    }
}

/// The exposition of a snapshot, with the device's memory read now.
fn render(s: &State, dev: &Device) -> Exposition {
    let mut e = Exposition::new();
    let labels: Labels = vec![
        ("device", dev.info().spec().to_string()),
        ("name", dev.name().to_string()),
    ];
    let one = |v: Option<f64>| [(labels.clone(), v)];
    e.family(
        "suanli_train_steps_total",
        "Optimizer steps submitted by this process's training.",
        Kind::Counter,
        &one(Some(s.steps_done as f64)),
    );
    e.family(
        "suanli_train_epochs_total",
        "Epochs finished.",
        Kind::Counter,
        &one(Some(s.epochs_done as f64)),
    );
    e.family(
        "suanli_train_epoch",
        "The epoch running (0-based), or the last one.",
        Kind::Gauge,
        &one(Some(s.epoch as f64)),
    );
    e.family(
        "suanli_train_epochs",
        "Epochs this fit runs to.",
        Kind::Gauge,
        &one(Some(s.epochs as f64)),
    );
    e.family(
        "suanli_train_loss",
        "Mean training loss of the running epoch so far (of the last epoch once it ends).",
        Kind::Gauge,
        &one(s.loss),
    );
    e.family(
        "suanli_train_accuracy_ratio",
        "Training accuracy, as loss (classification losses only).",
        Kind::Gauge,
        &one(s.accuracy),
    );
    e.family(
        "suanli_train_validation_loss",
        "The last validation's loss.",
        Kind::Gauge,
        &one(s.val_loss),
    );
    e.family(
        "suanli_train_validation_accuracy_ratio",
        "The last validation's accuracy.",
        Kind::Gauge,
        &one(s.val_accuracy),
    );
    e.family(
        "suanli_train_samples_per_second",
        "Training samples per second over the last epoch.",
        Kind::Gauge,
        &one(s.samples_per_second),
    );
    e.family(
        "suanli_train_step_seconds",
        "Mean time of a step over the last epoch.",
        Kind::Gauge,
        &one(s.step_seconds),
    );
    let m = dev.memory_stats();
    e.family(
        "suanli_memory_in_use_bytes",
        "Device memory held by live buffers of suanli's pool.",
        Kind::Gauge,
        &one(Some(m.in_use as f64)),
    );
    e.family(
        "suanli_memory_cached_bytes",
        "Device memory in the pool's free lists.",
        Kind::Gauge,
        &one(Some(m.cached as f64)),
    );
    e.family(
        "suanli_memory_peak_bytes",
        "The most device memory held by live buffers so far.",
        Kind::Gauge,
        &one(Some(m.peak_in_use as f64)),
    );
    let kinds: Vec<(Labels, Option<f64>)> = MemoryKind::ALL
        .iter()
        .map(|k| {
            let mut l = labels.clone();
            l.push(("kind", k.name().to_string()));
            (l, Some(m.in_use_by(*k) as f64))
        })
        .collect();
    e.family(
        "suanli_memory_in_use_by_kind_bytes",
        "Device memory held, by what it holds (parameters, optimizer state, activations, …).",
        Kind::Gauge,
        &kinds,
    );
    render_group(&mut e, s);
    render_governor(&mut e, &s.governor);
    e
}

/// Shares of several devices and the exchange of several processes (no samples otherwise).
fn render_group(e: &mut Exposition, s: &State) {
    let shares: Vec<(Labels, Option<f64>)> = s
        .shares
        .iter()
        .enumerate()
        .map(|(i, (spec, v))| {
            (
                vec![("device", spec.clone()), ("replica", i.to_string())],
                Some(*v),
            )
        })
        .collect();
    e.family(
        "suanli_train_device_share_ratio",
        "Each device's share of the global batch at the last epoch's end (several devices).",
        Kind::Gauge,
        &shares,
    );
    let (bytes, secs) = (s.exchange.map(|x| x.0), s.exchange.map(|x| x.1));
    e.family(
        "suanli_train_exchange_sent_bytes_total",
        "Bytes this process sent to the other processes of the run (finished epochs).",
        Kind::Counter,
        &[(vec![], bytes)],
    );
    e.family(
        "suanli_train_exchange_seconds_total",
        "Seconds the gradient exchange worked (finished epochs).",
        Kind::Counter,
        &[(vec![], secs)],
    );
}

/// A family of the governor's: name, help, kind and the value per device.
type Family<'a> = (
    &'a str,
    &'a str,
    Kind,
    &'a dyn Fn(&GovernorReport) -> Option<f64>,
);

/// The governor's state per device (no samples without a governor).
fn render_governor(e: &mut Exposition, reports: &[GovernorReport]) {
    let each = |f: &dyn Fn(&GovernorReport) -> Option<f64>| -> Vec<(Labels, Option<f64>)> {
        reports
            .iter()
            .enumerate()
            .map(|(i, r)| {
                (
                    vec![
                        ("device", r.spec.clone()),
                        ("name", r.name.clone()),
                        ("replica", i.to_string()),
                    ],
                    f(r),
                )
            })
            .collect()
    };
    let families: [Family<'_>; 10] = [
        (
            "suanli_governor_duty_ratio",
            "The share of time the governor lets the device be busy (1: not held back).",
            Kind::Gauge,
            &|r| Some(r.duty),
        ),
        (
            "suanli_governor_temperature_celsius",
            "The device's temperature as the governor last read it.",
            Kind::Gauge,
            &|r| r.temperature_c,
        ),
        (
            "suanli_governor_power_watts",
            "The device's power draw as the governor last read it.",
            Kind::Gauge,
            &|r| r.power_w,
        ),
        (
            "suanli_governor_temperature_limit_celsius",
            "The device's temperature limit.",
            Kind::Gauge,
            &|r| r.max_temperature_c,
        ),
        (
            "suanli_governor_power_cap_watts",
            "The device's power cap.",
            Kind::Gauge,
            &|r| r.power_cap_w,
        ),
        (
            "suanli_governor_lowered_total",
            "Times the governor lowered the device's duty.",
            Kind::Counter,
            &|r| Some(r.lowered as f64),
        ),
        (
            "suanli_governor_raised_total",
            "Times the governor raised the device's duty.",
            Kind::Counter,
            &|r| Some(r.raised as f64),
        ),
        (
            "suanli_governor_paced_seconds_total",
            "Seconds of pause the governor inserted while the device was held back.",
            Kind::Counter,
            &|r| Some(r.paced_seconds),
        ),
        (
            "suanli_governor_over_limit_seconds_total",
            "Seconds the device was read over a limit (temperature or power).",
            Kind::Counter,
            &|r| Some(r.over_temperature_seconds + r.over_power_seconds),
        ),
        (
            "suanli_governor_sensor_errors_total",
            "Governor reads that failed or lacked a limited value.",
            Kind::Counter,
            &|r| Some(r.sensor_errors as f64),
        ),
    ];
    for (name, help, kind, f) in families {
        e.family(name, help, kind, &each(f));
    }
}
