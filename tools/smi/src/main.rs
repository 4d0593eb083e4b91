//! `suanli-smi`: every adapter suanli sees with its utilisation, memory, temperature, power,
//! clocks and throttling, whatever its vendor (NVML for NVIDIA, sysfs for AMD and Intel), as
//! a live table, JSON lines, or a Prometheus scrape target.
//!
//! ```text
//! suanli-smi                                  # the table every second; Ctrl-C stops
//! suanli-smi --once [--json] [--processes]     # one sample (and who uses each device)
//! suanli-smi --interval 0.5 --count 10 --json # JSON lines
//! suanli-smi --serve 127.0.0.1:9835           # /metrics in the Prometheus text format
//! suanli-smi --simulate 8 --serve 127.0.0.1:0 # 8 made-up devices (try a dashboard anywhere)
//! ```
//! docs/OPERATIONS.md explains the series and how to run it as a service.

mod args;
mod serve;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use suanli::telemetry::{device_processes, format_rows, DeviceProcess, Monitor, PciAddress, Row};

fn json(rows: &[Row], procs: Option<&[DeviceProcess]>) -> String {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    match procs {
        Some(p) => serde_json::json!({ "time": t, "devices": rows, "processes": p }),
        None => serde_json::json!({ "time": t, "devices": rows }),
    }
    .to_string()
}

/// The device spec a process's PCI address belongs to (`?` when suanli does not list it).
fn spec_of(rows: &[Row], pci: &str) -> String {
    let want = PciAddress::parse(pci);
    rows.iter()
        .find(|r| want.is_some() && PciAddress::parse(&r.pci_bus_id) == want)
        .map_or_else(|| format!("? ({pci})"), |r| r.spec.clone())
}

/// The processes table: one line per process and device.
fn format_processes(rows: &[Row], procs: &[DeviceProcess]) -> String {
    let mut s = format!(
        "\n{:<9} {:>8} {:<20} {:>12} {:>14}\n",
        "device", "pid", "process", "memory", "busy"
    );
    if procs.is_empty() {
        s.push_str("(no process found: Linux DRM fdinfo, and NVML for NVIDIA GPUs)\n");
    }
    for p in procs {
        let mem = p.memory_bytes.map_or("n/a".into(), |b| {
            format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
        });
        let busy = p
            .engine_ns
            .map_or("n/a".into(), |n| format!("{:.3} s", n as f64 / 1e9));
        s.push_str(&format!(
            "{:<9} {:>8} {:<20} {:>12} {:>14}\n",
            spec_of(rows, &p.pci_bus_id),
            p.pid,
            p.name,
            mem,
            busy
        ));
    }
    s
}

/// `--set-power-limit`: the adapter `spec` names, its limit set; the exit status.
fn set_power_limit(spec: &str, watts: f64) -> i32 {
    let result = suanli::devices().and_then(|all| {
        let want: suanli::DeviceSpec = spec.parse()?;
        let d = all.into_iter().find(|d| d.spec() == want).ok_or_else(|| {
            suanli::Error::DeviceNotFound {
                spec: spec.to_string(),
                available: "see suanli-smi --once".into(),
            }
        })?;
        suanli::telemetry::power_limit::set_power_limit(&d, watts)
    });
    match result {
        Ok(c) => {
            println!(
                "{spec}: power limit {} -> {:.0} W (via {})",
                c.before_w.map_or("unknown".into(), |b| format!("{b:.0} W")),
                c.after_w,
                c.via
            );
            0
        }
        Err(e) => {
            eprintln!("suanli-smi: {e}");
            1
        }
    }
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
    if let Some((spec, watts)) = &a.set_power_limit {
        std::process::exit(set_power_limit(spec, *watts));
    }
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
        let procs = a
            .processes
            .then(|| device_processes(std::path::Path::new("/proc"), &rows));
        if a.json {
            println!("{}", json(&rows, procs.as_deref()));
        } else {
            if !a.once {
                print!("\x1b[2J\x1b[H"); // clear the terminal, cursor home
                println!("suanli-smi: every {}s (Ctrl-C stops)\n", a.interval);
            }
            print!("{}", format_rows(&rows));
            if let Some(p) = &procs {
                print!("{}", format_processes(&rows, p));
            }
        }
        n += 1;
        if a.count.is_some_and(|c| n >= c) {
            break;
        }
        std::thread::sleep(Duration::from_secs_f64(a.interval));
    }
}
