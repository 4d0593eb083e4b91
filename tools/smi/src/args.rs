//! The command line.

/// What the command line asks for.
#[derive(Debug, PartialEq)]
pub struct Args {
    pub once: bool,
    pub json: bool,
    pub interval: f64,
    pub count: Option<u64>,
    /// Serve /metrics at this address instead of printing.
    pub serve: Option<String>,
    /// Made-up devices instead of the real adapters.
    pub simulate: Option<usize>,
    /// Also list the processes using each device (Linux DRM fdinfo).
    pub processes: bool,
    /// Set a board's own power limit (device spec, watts) and exit: an explicit opt-in.
    pub set_power_limit: Option<(String, f64)>,
}

pub const USAGE: &str =
    "usage: suanli-smi [--once] [--json] [--processes] [--interval SECS] [--count N]
       suanli-smi --serve ADDR:PORT        (Prometheus /metrics; port 0 picks a free one)
       any of them with --simulate N       (N made-up devices instead of the adapters)
       suanli-smi --set-power-limit gpu:0=250   (sets the board's own limit, in W; needs root)";

/// Parses the arguments (without the program name).
pub fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args {
        once: false,
        json: false,
        interval: 1.0,
        count: None,
        serve: None,
        simulate: None,
        processes: false,
        set_power_limit: None,
    };
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match flag.as_str() {
            "--once" => a.once = true,
            "--json" => a.json = true,
            "--processes" => a.processes = true,
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
            "--serve" => a.serve = Some(value("--serve")?),
            "--set-power-limit" => {
                let v = value("--set-power-limit")?;
                let bad =
                    || format!("--set-power-limit: expected DEVICE=WATTS (gpu:0=250), found {v:?}");
                let (spec, w) = v.split_once('=').ok_or_else(bad)?;
                let w: f64 = w.trim().parse().map_err(|_| bad())?;
                if !(w.is_finite() && w > 0.0) {
                    return Err(bad());
                }
                a.set_power_limit = Some((spec.trim().to_string(), w));
            }
            "--simulate" => {
                let v = value("--simulate")?;
                a.simulate = Some(
                    v.parse()
                        .ok()
                        .filter(|n: &usize| (1..=1024).contains(n))
                        .ok_or(format!(
                            "--simulate: expected 1..=1024 devices, found {v:?}"
                        ))?,
                );
            }
            "-h" | "--help" => {
                println!("{USAGE}");
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

#[cfg(test)]
mod tests {
    use super::parse;

    fn p(s: &str) -> Result<super::Args, String> {
        parse(s.split_whitespace().map(String::from))
    }

    #[test]
    fn flags_and_bad_values() {
        let a = p("--serve 127.0.0.1:9835 --simulate 8").unwrap();
        assert_eq!(a.serve.as_deref(), Some("127.0.0.1:9835"));
        assert_eq!(a.simulate, Some(8));
        assert_eq!(p("--once").unwrap().count, Some(1));
        for bad in [
            "--interval 0",
            "--interval -1",
            "--count x",
            "--simulate 0",
            "--serve",
            "--bogus",
            "--set-power-limit gpu:0",
            "--set-power-limit gpu:0=-5",
        ] {
            assert!(p(bad).is_err(), "{bad} accepted");
        }
    }
}
