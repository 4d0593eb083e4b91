//! The NVIDIA path end to end without NVIDIA: a fake libnvidia-ml
//! (`tests/fixtures/fake_nvml.c`, built here with the C compiler every Rust install has) is
//! loaded through `SUANLI_NVML_LIB`, and suanli reads it as it would a real GPU: readings in
//! base units on the exporter, a failing and an unsupported sensor, the processes NVML lists,
//! and the power-limit opt-in (in range, out of range, refused for want of root).
//!
//! One test function: NVML is loaded once per process, so the variable must be set before
//! anything in this binary touches it.
#![cfg(feature = "nvml")]

mod common;
use common::sample;

use std::path::{Path, PathBuf};
use std::process::Command;

use suanli::telemetry::exposition::{render, Health};
use suanli::telemetry::power_limit::set_power_limit_in;
use suanli::telemetry::{device_processes, sensor_in, Monitor};
use suanli::{AdapterDesc, BackendKind, DeviceKind};

fn nvidia(index: usize, pci: &str) -> AdapterDesc {
    let mut d = common::fake_adapter(
        "NVIDIA H100 80GB HBM3 (fake)",
        0x10de,
        0x2330,
        DeviceKind::Discrete,
        BackendKind::Vulkan,
        pci,
    );
    d.gpu_index = Some(index);
    d
}

/// Builds the fake library into a fresh directory; its path.
fn build_fake() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("suanli-fake-nvml-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("libnvidia-ml.so.1");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_nvml.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let st = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .unwrap_or_else(|e| panic!("the fake NVML needs a C compiler ({cc}): {e}"));
    assert!(st.success(), "{cc} could not build {}", src.display());
    out
}

#[test]
fn a_fake_nvml_reads_like_an_nvidia_gpu() {
    std::env::set_var("SUANLI_NVML_LIB", build_fake());
    suanli::telemetry::nvml::status().expect("the fake NVML loads");
    let empty = std::env::temp_dir().join(format!("suanli-nvml-nodrm-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();

    // Vulkan's 4-digit domain finds NVML's 8-digit one.
    let a = nvidia(0, "0000:0a:00.0");
    let b = nvidia(1, "0000:0b:00.0");
    let gone = nvidia(2, "0000:0c:00.0");
    let mut sa = sensor_in(&empty, &a);
    assert_eq!(sa.source(), "nvml");
    let r = sa.read();
    assert_eq!(r.utilisation, Some(37.0));
    assert_eq!(r.memory_used, Some(12 << 30));
    assert_eq!(r.memory_total, Some(80 << 30));
    assert_eq!(r.temperature_c, Some(64.0));
    assert_eq!(r.power_w, Some(212.5), "milliwatts become watts");
    assert_eq!(r.power_limit_w, Some(700.0));
    assert_eq!(r.graphics_clock_mhz, Some(1980.0));
    assert_eq!(r.memory_clock_mhz, Some(2619.0));
    assert_eq!(r.throttled, Some(true), "SW thermal slowdown counts");
    assert_eq!(r.errors, 0);

    // A failing call is an error and no value; an unsupported one just no value.
    let rb = sensor_in(&empty, &b).read();
    assert_eq!(rb.utilisation, None);
    assert_eq!(rb.temperature_c, None);
    assert_eq!(rb.power_w, Some(75.0));
    assert_eq!(rb.errors, 1, "only the failing utilisation counts: {rb:?}");
    // A GPU NVML does not know: no sensor, and the reason says NVML was asked.
    let mut sg = sensor_in(&empty, &gone);
    assert!(sg.source().contains("NVML"), "{}", sg.source());
    assert_eq!(sg.read().temperature_c, None);

    // On the exporter: base units, NVIDIA labels, no sample for what is missing.
    let mut m = Monitor::with_adapters(vec![a.clone(), b.clone()], &empty);
    let rows = m.sample();
    let mut health = Health::default();
    for r in &rows {
        *health
            .sensor_errors
            .entry(r.reading.source.clone())
            .or_default() += u64::from(r.reading.errors);
    }
    let text = render(&rows, &health);
    let on_a = "device=\"gpu:0\"";
    assert!(text.contains("vendor=\"NVIDIA\""), "{text}");
    assert_eq!(
        sample(&text, "suanli_device_temperature_celsius", on_a),
        Some(64.0)
    );
    assert_eq!(
        sample(&text, "suanli_device_power_watts", on_a),
        Some(212.5)
    );
    assert_eq!(
        sample(&text, "suanli_device_utilization_ratio", on_a),
        Some(0.37)
    );
    assert_eq!(
        sample(&text, "suanli_device_memory_used_bytes", on_a),
        Some((12u64 << 30) as f64)
    );
    assert_eq!(
        sample(&text, "suanli_device_graphics_clock_hertz", on_a),
        Some(1.98e9)
    );
    let temps = text
        .lines()
        .filter(|l| l.starts_with("suanli_device_temperature_celsius{"))
        .count();
    assert_eq!(
        temps, 1,
        "the GPU without a temperature has no sample:\n{text}"
    );
    assert_eq!(
        sample(&text, "suanli_sensor_errors_total", "source=\"nvml\""),
        Some(1.0)
    );

    // Processes: this test's process in both of NVML's lists counts once, with its memory and
    // name; pid 1's memory is not available and stays so.
    let rows_a: Vec<_> = rows
        .iter()
        .filter(|r| r.pci_bus_id.ends_with("0a:00.0"))
        .cloned()
        .collect();
    let procs = device_processes(Path::new("/proc"), &rows_a);
    let me = std::process::id();
    let mine: Vec<_> = procs.iter().filter(|p| p.pid == me).collect();
    assert_eq!(mine.len(), 1, "{procs:?}");
    assert_eq!(mine[0].memory_bytes, Some(256 << 20));
    assert_eq!(mine[0].driver, "nvidia");
    assert_eq!(mine[0].pci_bus_id, "0000:0a:00.0");
    let comm = std::fs::read_to_string("/proc/self/comm").unwrap();
    assert_eq!(mine[0].name, comm.trim());
    let init = procs.iter().find(|p| p.pid == 1).expect("pid 1 is listed");
    assert_eq!(init.memory_bytes, None);
    // The second GPU lists no processes (graphics NOT_SUPPORTED, compute empty): none, no error.
    let rows_b: Vec<_> = rows
        .iter()
        .filter(|r| r.pci_bus_id.ends_with("0b:00.0"))
        .cloned()
        .collect();
    assert!(device_processes(Path::new("/proc"), &rows_b)
        .iter()
        .all(|p| p.driver != "nvidia"));

    // The power-limit opt-in: within the board's range it is set and read back.
    let c = set_power_limit_in(&empty, &a, 450.0).unwrap();
    assert_eq!(c.before_w, Some(700.0));
    assert_eq!(c.range_w, Some((200.0, 700.0)));
    assert_eq!(c.via, "nvml");
    assert_eq!(sensor_in(&empty, &a).read().power_limit_w, Some(450.0));
    // Outside it: refused before NVML is asked; the limit is unchanged.
    let e = set_power_limit_in(&empty, &a, 900.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("200-700 W"), "{e}");
    // Without root: NVML's refusal says so, and nothing changes.
    std::env::set_var("FAKE_NVML_DENY", "1");
    let e = set_power_limit_in(&empty, &a, 300.0)
        .unwrap_err()
        .to_string();
    std::env::remove_var("FAKE_NVML_DENY");
    assert!(e.contains("needs root"), "{e}");
    assert_eq!(sensor_in(&empty, &a).read().power_limit_w, Some(450.0));
    // A GPU that cannot tell its range is refused with the reason.
    let e = set_power_limit_in(&empty, &b, 300.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("range"), "{e}");
}
