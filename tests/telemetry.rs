//! Hardware telemetry: sysfs providers against fixture trees (amdgpu, i915, xe), matching by
//! PCI address and ids, energy-counter wrap-around, missing files, NVML absent, and the
//! `monitor --once --json` output.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use suanli::telemetry::{energy_delta, sensor_in, sensor_in_with_clock, Monitor, PciAddress};
use suanli::{AdapterDesc, BackendKind, DeviceKind};

fn adapter(name: &str, vendor_id: u32, device_id: u32, kind: DeviceKind, pci: &str) -> AdapterDesc {
    common::fake_adapter(name, vendor_id, device_id, kind, BackendKind::Vulkan, pci)
}

/// A fresh fixture root under the target directory.
fn root(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("suanli-sysfs-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn put(root: &Path, rel: &str, contents: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, contents).unwrap();
}

fn uevent(driver: &str, id: &str, slot: &str) -> String {
    format!("DRIVER={driver}\nPCI_CLASS=30000\nPCI_ID={id}\nPCI_SUBSYS_ID=1DA2:E445\nPCI_SLOT_NAME={slot}\nMODALIAS=pci:v0\n")
}

/// An amdgpu card as the kernel lays it out, plus a connector entry that must be ignored.
fn amd_tree(r: &Path, card: &str, slot: &str, busy: &str) {
    put(
        r,
        &format!("{card}/device/uevent"),
        &uevent("amdgpu", "1002:73BF", slot),
    );
    put(r, &format!("{card}/device/gpu_busy_percent"), busy);
    put(
        r,
        &format!("{card}/device/mem_info_vram_used"),
        "3221225472\n",
    );
    put(
        r,
        &format!("{card}/device/mem_info_vram_total"),
        "17163091968\n",
    );
    let hw = format!("{card}/device/hwmon/hwmon3");
    put(r, &format!("{hw}/temp1_input"), "71000\n");
    put(r, &format!("{hw}/power1_average"), "212000000\n");
    put(r, &format!("{hw}/power1_cap"), "300000000\n");
    put(r, &format!("{hw}/freq1_input"), "2250000000\n");
    put(r, &format!("{hw}/freq2_input"), "1000000000\n");
    put(r, &format!("{card}-DP-1/status"), "connected\n");
}

#[test]
fn pci_addresses_compare_by_value() {
    let vk = PciAddress::parse("0000:0a:00.0").unwrap();
    let nv = PciAddress::parse("00000000:0A:00.0").unwrap();
    assert_eq!(vk, nv);
    assert_eq!(vk.nvml_string(), "00000000:0a:00.0");
    for bad in ["", "0a:00.0", "0000:0a:00", "zz:0a:00.0", "0000:0a:00.0:1"] {
        assert!(PciAddress::parse(bad).is_none(), "{bad:?} parsed");
    }
}

#[test]
fn amdgpu_reads_every_field_and_matches_by_pci_address() {
    let r = root("amd");
    // Two identical cards: only the PCI address tells them apart, and the order in the
    // directory is the reverse of the adapters'.
    amd_tree(&r, "card0", "0000:0b:00.0", "13\n");
    amd_tree(&r, "card1", "0000:03:00.0", "87\n");
    let a = adapter(
        "AMD Radeon RX 6800 XT",
        0x1002,
        0x73bf,
        DeviceKind::Discrete,
        "0000:03:00.0",
    );
    let mut s = sensor_in(&r, &a);
    let x = s.read();
    assert_eq!(x.source, "amdgpu sysfs");
    assert_eq!(x.utilisation, Some(87.0)); // card1, not card0
    assert_eq!(x.memory_used, Some(3 << 30));
    assert_eq!(x.memory_total, Some(17163091968));
    assert_eq!(x.temperature_c, Some(71.0));
    assert_eq!(x.power_w, Some(212.0));
    assert_eq!(x.power_limit_w, Some(300.0));
    assert_eq!(x.graphics_clock_mhz, Some(2250.0));
    assert_eq!(x.memory_clock_mhz, Some(1000.0));
    assert_eq!(x.throttled, None);
    assert!(x.summary().contains("87%"), "{}", x.summary());

    // Without a PCI address, identical ids are ambiguous: no guess.
    let anon = adapter(
        "AMD Radeon RX 6800 XT",
        0x1002,
        0x73bf,
        DeviceKind::Discrete,
        "",
    );
    let y = sensor_in(&r, &anon).read();
    assert_eq!(y.source, "none");
    assert_eq!(y.utilisation, None);
}

#[test]
fn missing_files_read_as_none_and_ids_match_when_unique() {
    let r = root("sparse");
    put(
        &r,
        "card0/device/uevent",
        &uevent("amdgpu", "1002:15BF", "0000:c1:00.0"),
    );
    put(&r, "card0/device/gpu_busy_percent", "garbage\n");
    put(&r, "card0/device/hwmon/hwmon0/temp1_input", "45500\n");
    // No PCI address from the backend, but the ids are unique on this machine.
    let a = adapter(
        "AMD Radeon 780M",
        0x1002,
        0x15bf,
        DeviceKind::Integrated,
        "",
    );
    let x = sensor_in(&r, &a).read();
    assert_eq!(x.source, "amdgpu sysfs");
    assert_eq!(x.utilisation, None, "unparsable file must read as n/a");
    assert_eq!(x.temperature_c, Some(45.5));
    assert_eq!(
        (x.memory_used, x.power_w, x.graphics_clock_mhz),
        (None, None, None)
    );
    assert!(x.columns()[0] == "n/a" && x.columns()[1] == "n/a");
}

#[test]
fn i915_power_comes_from_the_energy_counter_across_a_wrap() {
    let r = root("i915");
    put(
        &r,
        "card1/device/uevent",
        &uevent("i915", "8086:56A0", "0000:03:00.0"),
    );
    put(&r, "card1/gt_act_freq_mhz", "2400\n");
    put(&r, "card1/gt/gt0/throttle_reason_status", "1\n");
    let hw = "card1/device/hwmon/hwmon5";
    put(&r, &format!("{hw}/power1_max"), "190000000\n");
    // 1000 µJ before the 32-bit wrap.
    put(
        &r,
        &format!("{hw}/energy1_input"),
        &format!("{}\n", (1u64 << 32) - 1000),
    );
    let a = adapter(
        "Intel(R) Arc(TM) A770 Graphics",
        0x8086,
        0x56a0,
        DeviceKind::Discrete,
        "0000:03:00.0",
    );
    // An injected clock: the second reading is exactly 0.2 s after the first.
    let t0 = std::time::Instant::now();
    let mut ticks = [t0, t0 + std::time::Duration::from_millis(200)].into_iter();
    let clock = Box::new(move || {
        ticks
            .next()
            .unwrap_or(t0 + std::time::Duration::from_secs(9))
    });
    let mut s = sensor_in_with_clock(&r, &a, clock);
    let first = s.read();
    assert_eq!(first.source, "i915 sysfs");
    assert_eq!(first.power_w, None, "a rate needs two samples");
    assert_eq!(first.power_limit_w, Some(190.0));
    assert_eq!(first.graphics_clock_mhz, Some(2400.0));
    assert_eq!(first.throttled, Some(true));
    assert_eq!(
        first.temperature_c, None,
        "i915 exposes no temperature here"
    );
    // 1000 µJ to the wrap + 49 000 after it = 0.05 J in 0.2 s = 0.25 W.
    put(&r, &format!("{hw}/energy1_input"), "49000\n");
    let second = s.read();
    let p = second.power_w.expect("power from two energy samples");
    assert!(
        (p - 0.25).abs() < 1e-9,
        "power {p} W (0.25 expected; the wrap?)"
    );
}

#[test]
fn energy_wraps_at_32_or_64_bits() {
    assert_eq!(energy_delta(5, 5), 0);
    assert_eq!(energy_delta(u32::MAX as u64, 0), 1);
    assert_eq!(energy_delta(u64::MAX - 9, 10), 20);
}

#[test]
fn xe_clock_and_throttle_paths() {
    let r = root("xe");
    put(
        &r,
        "card0/device/uevent",
        &uevent("xe", "8086:E20B", "0000:04:00.0"),
    );
    put(&r, "card0/device/tile0/gt0/freq0/act_freq", "1850\n");
    put(&r, "card0/device/tile0/gt0/freq0/throttle/status", "0\n");
    put(&r, "card0/device/hwmon/hwmon2/temp1_input", "52000\n");
    put(&r, "card0/device/hwmon/hwmon2/power1_input", "95000000\n");
    let a = adapter(
        "Intel(R) Graphics (BMG G21)",
        0x8086,
        0xe20b,
        DeviceKind::Discrete,
        "0000:04:00.0",
    );
    let x = sensor_in(&r, &a).read();
    assert_eq!(x.source, "xe sysfs");
    assert_eq!(x.graphics_clock_mhz, Some(1850.0));
    assert_eq!(x.throttled, Some(false));
    assert_eq!(x.temperature_c, Some(52.0));
    assert_eq!(x.power_w, Some(95.0));
}

#[test]
fn software_adapters_and_absent_drivers_report_na() {
    let r = root("none");
    let lvp = adapter(
        "llvmpipe (LLVM 15.0.6, 256 bits)",
        0x10005,
        0,
        DeviceKind::Software,
        "",
    );
    let x = sensor_in(&r, &lvp).read();
    assert!(x.source.starts_with("none"), "{}", x.source);
    assert!(x.columns().iter().all(|c| c == "n/a"), "{:?}", x.columns());
    // An NVIDIA GPU on a machine without NVML (this one) and without a sysfs card: n/a, and
    // the source says why, rather than a panic or an error.
    let nv = adapter(
        "NVIDIA H200",
        0x10de,
        0x2335,
        DeviceKind::Discrete,
        "0000:18:00.0",
    );
    let y = sensor_in(&r, &nv).read();
    #[cfg(feature = "nvml")]
    if suanli::telemetry::nvml::status().is_err() {
        assert!(y.source.contains("NVML"), "{}", y.source);
        assert_eq!(y.utilisation, None);
    }
    #[cfg(not(feature = "nvml"))]
    assert_eq!(y.source, "none");
}

#[test]
fn monitor_samples_fixture_adapters() {
    let r = root("monitor");
    amd_tree(&r, "card0", "0000:03:00.0", "42\n");
    let adapters = vec![
        adapter(
            "AMD Radeon RX 6800 XT",
            0x1002,
            0x73bf,
            DeviceKind::Discrete,
            "0000:03:00.0",
        ),
        adapter("llvmpipe", 0x10005, 0, DeviceKind::Software, ""),
    ];
    let mut m = Monitor::with_adapters(adapters, &r);
    let rows = m.sample();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].reading.utilisation, Some(42.0));
    let table = suanli::telemetry::format_rows(&rows);
    assert!(table.contains("42%") && table.contains("n/a"), "{table}");
    let v: serde_json::Value = serde_json::to_value(&rows).unwrap();
    assert_eq!(v[0]["reading"]["temperature_c"], 71.0);
    assert!(v[1]["reading"]["power_w"].is_null());
}

#[test]
fn device_watch_warns_on_throttling_heat_and_idle_epochs() {
    let r = root("watch");
    put(
        &r,
        "card0/device/uevent",
        &uevent("amdgpu", "1002:744C", "0000:05:00.0"),
    );
    put(&r, "card0/device/hwmon/hwmon1/temp1_input", "91000\n");
    put(&r, "card0/gt/gt0/throttle_reason_status", "1\n");
    let a = adapter(
        "AMD Radeon RX 7900 XTX",
        0x1002,
        0x744c,
        DeviceKind::Discrete,
        "0000:05:00.0",
    );
    let mut w = suanli::telemetry::DeviceWatch::with_sensor(&a.name, sensor_in(&r, &a));
    let ev = w.epoch_end(1, Some(0.2));
    use suanli::telemetry::WatchEvent;
    assert!(ev.contains(&WatchEvent::Throttled), "{ev:?}");
    assert!(
        ev.contains(&WatchEvent::Hot {
            temperature_c: 91.0
        }),
        "{ev:?}"
    );
    assert!(
        ev.contains(&WatchEvent::LowUtilisation { fraction: 0.2 }),
        "{ev:?}"
    );
    // A cool, busy, unthrottled epoch: nothing to say.
    put(&r, "card0/device/hwmon/hwmon1/temp1_input", "60000\n");
    put(&r, "card0/gt/gt0/throttle_reason_status", "0\n");
    assert!(w.epoch_end(2, Some(0.97)).is_empty());
    assert_eq!(w.last.as_ref().unwrap().temperature_c, Some(60.0));
}

#[test]
fn a_board_power_limit_is_set_only_within_its_range_and_where_it_can_be() {
    use suanli::telemetry::power_limit::set_power_limit_in;
    let r = root("powercap");
    amd_tree(&r, "card0", "0000:03:00.0", "50\n");
    let hw = "card0/device/hwmon/hwmon3";
    put(&r, &format!("{hw}/power1_cap_min"), "150000000\n");
    put(&r, &format!("{hw}/power1_cap_max"), "330000000\n");
    let a = adapter(
        "AMD Radeon RX 6800 XT",
        0x1002,
        0x73bf,
        DeviceKind::Discrete,
        "0000:03:00.0",
    );
    let c = set_power_limit_in(&r, &a, 250.0).unwrap();
    assert_eq!(c.before_w, Some(300.0));
    assert_eq!(c.range_w, Some((150.0, 330.0)));
    let written = fs::read_to_string(r.join(hw).join("power1_cap")).unwrap();
    assert_eq!(written.trim(), "250000000");
    // Outside the board's range, or not a number: refused, the file untouched.
    for bad in [100.0, 400.0, f64::NAN, -5.0] {
        let e = set_power_limit_in(&r, &a, bad).unwrap_err().to_string();
        assert!(e.contains("expected"), "{e}");
    }
    assert_eq!(
        fs::read_to_string(r.join(hw).join("power1_cap"))
            .unwrap()
            .trim(),
        "250000000"
    );
    // An i915 card has no power1_cap, a software adapter no power limit at all.
    let r2 = root("powercap-intel");
    put(
        &r2,
        "card0/device/uevent",
        &uevent("i915", "8086:56A0", "0000:04:00.0"),
    );
    put(&r2, "card0/device/hwmon/hwmon1/energy1_input", "1000\n");
    let intel = adapter(
        "Intel Arc A770",
        0x8086,
        0x56a0,
        DeviceKind::Discrete,
        "0000:04:00.0",
    );
    let e = set_power_limit_in(&r2, &intel, 200.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("power1_cap"), "{e}");
    let soft = adapter("llvmpipe", 0x10005, 0, DeviceKind::Software, "");
    let e = set_power_limit_in(&r2, &soft, 200.0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("software"), "{e}");
}
