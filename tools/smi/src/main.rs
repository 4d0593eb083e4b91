//! `suanli-smi`: every adapter suanli sees with its utilisation, memory, temperature, power,
//! clocks and throttling, whatever its vendor (NVML for NVIDIA, sysfs for AMD and Intel), as
//! a live table, JSON lines, or a Prometheus scrape target.
//!
//! ```text
//! suanli-smi                                  # the table every second; Ctrl-C stops
//! suanli-smi --once [--json]                  # one sample
//! suanli-smi --interval 0.5 --count 10 --json # JSON lines
//! suanli-smi --serve 127.0.0.1:9835           # /metrics in the Prometheus text format
//! suanli-smi --simulate 8 --serve 127.0.0.1:0 # 8 made-up devices (try a dashboard anywhere)
//! ```
//! docs/OPERATIONS.md explains the series and how to run it as a service.

mod args;
mod serve;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use suanli::telemetry::{format_rows, Monitor, Row};

fn json(rows: &[Row]) -> String {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    serde_json::json!({ "time": t, "devices": rows }).to_string()
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let a = match args::parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("suanli-smi: {e}");
            std::process::exit(2);
        }
    };
    let monitor = match a.simulate {
        Some(n) => Ok(Monitor::simulated(n)),
        None => Monitor::new(),
    };
    let mut monitor = match monitor {
        Ok(m) => m,
        Err(e) => {
            eprintln!("suanli-smi: {e}");
            std::process::exit(1);
        }
    };
    if let Some(addr) = &a.serve {
        if let Err(e) = serve::run(addr, monitor) {
            eprintln!("suanli-smi: {e}");
            std::process::exit(1);
        }
        return;
    }
    // Rates (power from an energy counter) need a previous sample: take one, and let the
    // first printed one come a moment later.
    monitor.sample();
    std::thread::sleep(Duration::from_millis(if a.once { 250 } else { 100 }));
    let mut n = 0u64;
    loop {
        let rows = monitor.sample();
        if a.json {
            println!("{}", json(&rows));
        } else {
            if !a.once {
                print!("\x1b[2J\x1b[H"); // clear the terminal, cursor home
                println!("suanli-smi: every {}s (Ctrl-C stops)\n", a.interval);
            }
            print!("{}", format_rows(&rows));
        }
        n += 1;
        if a.count.is_some_and(|c| n >= c) {
            break;
        }
        std::thread::sleep(Duration::from_secs_f64(a.interval));
    }
}
