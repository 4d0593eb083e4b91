//! The exporter: `/metrics` in the Prometheus text format, each scrape reading every sensor
//! afresh (so the series are as old as the scrape, and an idle exporter costs nothing).

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

use suanli::telemetry::exposition::{render, Health};
use suanli::telemetry::Monitor;

const INDEX: &str =
    "<html><body><h1>suanli-smi</h1><p><a href=\"/metrics\">/metrics</a></p></body></html>\n";

/// Serves until killed. Errors only when the address cannot be bound (in use, not ours,
/// malformed): sensors that fail while serving are counted in
/// `suanli_sensor_errors_total`, and the exporter keeps answering.
pub fn run(addr: &str, mut monitor: Monitor) -> Result<(), String> {
    let server =
        tiny_http::Server::http(addr).map_err(|e| format!("cannot serve on {addr}: {e}"))?;
    let bound = server
        .server_addr()
        .to_ip()
        .map_or_else(|| addr.to_string(), |a| a.to_string());
    // The first line says where (port 0 picks one): scripts and tests read it.
    println!("serving http://{bound}/metrics");
    let _ = std::io::stdout().flush();
    log::info!("suanli-smi serving on {bound}");
    // Rates (power from an energy counter) need a previous sample. Every source's error
    // counter starts at 0, so the series exists before anything fails.
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    for r in monitor.sample() {
        errors.entry(r.reading.source.clone()).or_insert(0);
    }
    for request in server.incoming_requests() {
        let path = request.url().split('?').next().unwrap_or("").to_string();
        let response = match (request.method(), path.as_str()) {
            (tiny_http::Method::Get, "/metrics") => {
                let t = Instant::now();
                let rows = monitor.sample();
                for r in &rows {
                    if r.reading.errors > 0 {
                        *errors.entry(r.reading.source.clone()).or_default() +=
                            r.reading.errors as u64;
                        log::warn!(
                            "{}: {} sensor read(s) failed ({})",
                            r.spec,
                            r.reading.errors,
                            r.reading.source
                        );
                    }
                }
                let health = Health {
                    scrape_seconds: t.elapsed().as_secs_f64(),
                    sensor_errors: errors.clone(),
                };
                text(
                    render(&rows, &health),
                    "text/plain; version=0.0.4; charset=utf-8",
                    200,
                )
            }
            (tiny_http::Method::Get, "/") => {
                text(INDEX.to_string(), "text/html; charset=utf-8", 200)
            }
            _ => text(
                "not found: try /metrics\n".to_string(),
                "text/plain; charset=utf-8",
                404,
            ),
        };
        if let Err(e) = request.respond(response) {
            log::warn!("a scrape's connection failed: {e}");
        }
    }
    Ok(())
}

fn text(
    body: String,
    content_type: &str,
    status: u16,
) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let header = tiny_http::Header::from_bytes(&b"Content-Type"[..], content_type.as_bytes())
        .expect("a valid header");
    tiny_http::Response::from_string(body)
        .with_header(header)
        .with_status_code(status)
}
