//! A live per-adapter table, like `nvidia-smi` / `nvtop`: utilisation, memory, temperature,
//! power, clocks and throttling, for every adapter suanli sees, whatever its vendor.
//!
//! ```text
//! cargo run --release --example monitor                  # refreshes every second; Ctrl-C stops
//! cargo run --release --example monitor -- --once        # one snapshot, then exit
//! cargo run --release --example monitor -- --once --json # machine-readable
//! cargo run --release --example monitor -- --interval 0.5 --count 10 --json  # JSON lines
//! ```
//!
//! Fields a platform does not expose print as `n/a` (a software adapter has no sensors).
//! NVIDIA readings come from NVML, loaded at run time; AMD and Intel from Linux sysfs.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use suanli::telemetry::{format_rows, Monitor, Row};

struct Args {
    once: bool,
    json: bool,
    interval: f64,
    count: Option<u64>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        once: false,
        json: false,
        interval: 1.0,
        count: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match flag.as_str() {
            "--once" => a.once = true,
            "--json" => a.json = true,
            "--interval" => {
                let v = value("--interval")?;
                a.interval = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| *s > 0.0 && s.is_finite())
                    .ok_or(format!("--interval: expected seconds > 0, found {v:?}"))?;
            }
            "--count" => {
                let v = value("--count")?;
                a.count = Some(
                    v.parse()
                        .map_err(|_| format!("--count: expected a number, found {v:?}"))?,
                );
            }
            "-h" | "--help" => {
                println!("usage: monitor [--once] [--json] [--interval SECS] [--count N]");
                std::process::exit(0);
            }
            other => return Err(format!("unknown flag {other:?} (try --help)")),
        }
    }
    if a.once {
        a.count = Some(1);
    }
    Ok(a)
}

fn json(rows: &[Row]) -> String {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    serde_json::json!({ "time": t, "devices": rows }).to_string()
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let mut monitor = match Monitor::new() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    // Rates (power from an energy counter) need a previous sample.
    monitor.sample();
    std::thread::sleep(Duration::from_millis(if args.once { 250 } else { 100 }));
    let mut n = 0u64;
    loop {
        let rows = monitor.sample();
        if args.json {
            println!("{}", json(&rows));
        } else {
            if !args.once {
                print!("\x1b[2J\x1b[H"); // clear the terminal, cursor home
                println!("suanli monitor: every {}s (Ctrl-C stops)\n", args.interval);
            }
            print!("{}", format_rows(&rows));
        }
        n += 1;
        if args.count.is_some_and(|c| n >= c) {
            break;
        }
        std::thread::sleep(Duration::from_secs_f64(args.interval));
    }
}
