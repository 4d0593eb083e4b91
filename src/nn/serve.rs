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
use crate::nn::options::{Callback, EpochBegin, EpochEnd, History, Progress};
use crate::runtime::Device;
use crate::telemetry::exposition::{Exposition, Kind, Labels};

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
}

/// Serves `/metrics` for the training it is a callback of (see the module docs). The server
/// stops when this is dropped.
pub struct MetricsServer {
    state: Arc<Mutex<State>>,
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
        let (s, st, dev) = (server.clone(), state.clone(), device.clone());
        let thread = std::thread::Builder::new()
            .name("suanli-metrics".into())
            .spawn(move || {
                for request in s.incoming_requests() {
                    let ok = request.url().split('?').next() == Some("/metrics");
                    let body = if ok {
                        let snapshot = st.lock().map(|g| g.clone()).unwrap_or_default();
                        render(&snapshot, &dev)
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
            server,
            addr: bound,
            thread: Some(thread),
        })
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
        });
        true
    }
}

/// The exposition of a snapshot, with the device's memory read now.
fn render(s: &State, dev: &Device) -> String {
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
    e.finish()
}
