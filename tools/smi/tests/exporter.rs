//! suanli-smi as operators use it: the table and JSON, and `/metrics` scraped over HTTP,
//! checked by `promtool check metrics` and ingested by a real Prometheus server (both from
//! Debian's `prometheus` package; required when `CI` is set, skipped with a notice
//! otherwise).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SMI: &str = env!("CARGO_BIN_EXE_suanli-smi");

/// A child process killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `suanli-smi --serve 127.0.0.1:0 ARGS` and returns it with the address it printed.
fn serve(args: &[&str]) -> (Proc, String) {
    let mut child = Command::new(SMI)
        .args(["--serve", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("suanli-smi starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("serving http://")
        .and_then(|s| s.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    (Proc(child), addr)
}

/// `GET path` on `addr`: (status, content type, body).
fn get(addr: &str, path: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).expect("connects");
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let ctype = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Type: "))
        .unwrap_or("")
        .to_string();
    (status, ctype, body.to_string())
}

/// The value of the sample `name{labels…}` whose label text contains `has`.
fn sample(text: &str, name: &str, has: &str) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .find(|l| l.contains(has))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// Whether a tool of Debian's `prometheus` package is here; in CI it must be.
fn have(tool: &str) -> bool {
    let ok = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "{tool} is missing (Debian's prometheus package): CI installs it"
        );
        eprintln!("skipping: {tool} not installed (apt-get install prometheus)");
    }
    ok
}

const FAMILIES: [&str; 9] = [
    "suanli_device_utilization_ratio",
    "suanli_device_memory_used_bytes",
    "suanli_device_memory_total_bytes",
    "suanli_device_temperature_celsius",
    "suanli_device_power_watts",
    "suanli_device_power_limit_watts",
    "suanli_device_graphics_clock_hertz",
    "suanli_device_memory_clock_hertz",
    "suanli_device_throttled",
];

#[test]
fn simulated_devices_scrape_in_base_units_and_pass_promtool() {
    let (_p, addr) = serve(&["--simulate", "8"]);
    let (status, ctype, text) = get(&addr, "/metrics");
    assert_eq!(status, 200);
    assert!(ctype.starts_with("text/plain; version=0.0.4"), "{ctype}");
    assert_eq!(sample(&text, "suanli_up", ""), Some(1.0));
    assert_eq!(sample(&text, "suanli_devices", ""), Some(8.0));
    for f in FAMILIES {
        let n = text
            .lines()
            .filter(|l| l.starts_with(&format!("{f}{{")))
            .count();
        assert_eq!(n, 8, "{f}: {n} samples");
        assert!(
            text.contains(&format!("# TYPE {f} gauge")),
            "{f} has no TYPE line"
        );
    }
    for d in 0..8 {
        let dev = format!("device=\"sim:{d}\",name=\"Simulated GPU {d}\",vendor=\"simulated\",backend=\"none\",kind=\"simulated\"");
        let u = sample(&text, "suanli_device_utilization_ratio", &dev).unwrap();
        assert!((0.0..=1.0).contains(&u), "utilisation as a ratio: {u}");
        let c = sample(&text, "suanli_device_graphics_clock_hertz", &dev).unwrap();
        assert!(c > 1e9 && c < 3e9, "clocks in hertz: {c}");
        let t = sample(&text, "suanli_device_memory_total_bytes", &dev).unwrap();
        assert_eq!(t, (80u64 << 30) as f64);
    }
    assert_eq!(
        sample(&text, "suanli_sensor_errors_total", "source=\"simulated\""),
        Some(0.0)
    );
    assert!(text.contains("# TYPE suanli_sensor_errors_total counter"));
    // Other paths: an index and a 404; the exporter keeps serving.
    assert_eq!(get(&addr, "/").0, 200);
    assert_eq!(get(&addr, "/nope").0, 404);
    assert_eq!(get(&addr, "/metrics").0, 200);
    if have("promtool") {
        let mut check = Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        check
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let out = check.wait_with_output().unwrap();
        let msg = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && msg.trim().is_empty(),
            "promtool check metrics: {msg}"
        );
    }
}

#[test]
fn a_software_adapter_has_identity_but_no_sensor_samples() {
    // The real adapters (lavapipe here): identity and health, and no zero where no sensor is.
    let (_p, addr) = serve(&[]);
    let (status, _, text) = get(&addr, "/metrics");
    assert_eq!(status, 200);
    assert!(text.contains("suanli_device_info{"), "{text}");
    if !text.contains("kind=\"discrete\"") && !text.contains("kind=\"integrated\"") {
        for f in FAMILIES {
            assert!(
                !text.contains(&format!("{f}{{")),
                "{f} sampled on a software adapter:\n{text}"
            );
        }
    }
}

#[test]
fn a_port_in_use_is_a_clear_error_and_the_first_server_goes_on() {
    let (_p, addr) = serve(&["--simulate", "1"]);
    let out = Command::new(SMI)
        .args(["--simulate", "1", "--serve", &addr])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("cannot serve on {addr}")), "{err}");
    assert_eq!(get(&addr, "/metrics").0, 200);
    let out = Command::new(SMI)
        .args(["--serve", "not an address"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn once_json_and_table() {
    let out = Command::new(SMI)
        .args(["--once", "--json", "--simulate", "2"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let devs = v["devices"].as_array().unwrap();
    assert_eq!(devs.len(), 2);
    assert_eq!(devs[1]["spec"], "sim:1");
    assert!(devs[0]["reading"]["temperature_c"].as_f64().unwrap() > 0.0);
    let out = Command::new(SMI).args(["--once"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("device "));
    // --processes adds who uses each device (an array, empty where no process reports DRM use).
    let out = Command::new(SMI)
        .args(["--once", "--json", "--processes"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["processes"].is_array(), "{v}");
    let out = Command::new(SMI)
        .args(["--interval", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_prometheus_server_ingests_every_series() {
    if !have("prometheus") {
        return;
    }
    let (_p, addr) = serve(&["--simulate", "3"]);
    let names: std::collections::BTreeSet<String> = get(&addr, "/metrics")
        .2
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    let dir = std::env::temp_dir().join(format!("suanli-prom-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: suanli\n    static_configs:\n      - targets: ['{addr}']\n"),
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let web = format!("127.0.0.1:{port}");
    let _prom = Proc(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={web}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts"),
    );
    // Poll its query API until every family we exported is there (the event), with a
    // deadline far above a 1 s scrape interval.
    let query = "/api/v1/query?query=group%20by%20(__name__)%20(%7Bjob%3D%22suanli%22%7D)";
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut seen = std::collections::BTreeSet::new();
    while Instant::now() < deadline {
        if let Ok(mut s) = TcpStream::connect(&web) {
            let _ = write!(s, "GET {query} HTTP/1.0\r\nHost: {web}\r\n\r\n");
            let mut text = String::new();
            let _ = s.read_to_string(&mut text);
            if let Some((_, body)) = text.split_once("\r\n\r\n") {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
                    seen = v["data"]["result"]
                        .as_array()
                        .map(|r| {
                            r.iter()
                                .filter_map(|x| x["metric"]["__name__"].as_str().map(String::from))
                                .collect()
                        })
                        .unwrap_or_default();
                    if names.is_subset(&seen) {
                        break;
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let missing: Vec<_> = names.difference(&seen).collect();
    assert!(
        missing.is_empty(),
        "Prometheus did not ingest {missing:?} (it has {seen:?})"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn once_json_lists_every_adapter_suanli_sees() {
    let out = Command::new(SMI)
        .args(["--once", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let devices = v["devices"].as_array().expect("a devices array");
    let listed = suanli::devices().unwrap_or_default();
    assert_eq!(devices.len(), listed.len());
    for (row, d) in devices.iter().zip(&listed) {
        assert_eq!(row["name"], d.name.as_str());
        assert!(row["reading"]["source"].is_string());
        if !d.kind.is_hardware() {
            assert!(row["reading"]["utilisation"].is_null());
        }
    }
    assert!(v["time"].as_f64().unwrap() > 1.0e9);
}

#[test]
fn the_grafana_dashboard_queries_only_exported_series() {
    let (_p, addr) = serve(&["--simulate", "2"]);
    let text = get(&addr, "/metrics").2;
    let dash = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/grafana/suanli-smi.json"
    ))
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&dash).expect("the dashboard is JSON");
    let mut used = Vec::new();
    for p in v["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().unwrap() {
            let expr = t["expr"].as_str().unwrap();
            let mut rest = expr;
            while let Some(i) = rest.find("suanli_") {
                let name: String = rest[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                rest = &rest[i + name.len()..];
                used.push(name);
            }
        }
    }
    assert!(used.len() >= 6, "{used:?}");
    for name in used {
        assert!(
            text.contains(&format!("# TYPE {name} ")),
            "the dashboard queries {name}, which the exporter does not export"
        );
    }
}
