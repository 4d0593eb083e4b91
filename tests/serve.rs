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
    text.lines()
        .find(|l| l.starts_with(&format!("{name}{{")))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
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
    // A port in use is a typed error naming it.
    let e = MetricsServer::start(server.address(), &dev)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains(server.address()), "{e}");
}
