//! The Prometheus exposition of telemetry from sensor fixtures (sysfs trees as amdgpu and
//! i915 lay them out): the right samples, in base units, with the identity labels; no
//! sample for a missing or failing sensor, and the failure counted.

mod common;
use common::sample;

use std::fs;
use std::path::{Path, PathBuf};

use suanli::telemetry::exposition::{render, Health};
use suanli::telemetry::Monitor;
use suanli::{BackendKind, DeviceKind};

fn root(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("suanli-expo-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

fn put(root: &Path, rel: &str, contents: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, contents).unwrap();
}

#[test]
fn amd_and_intel_fixtures_export_base_units_and_labels() {
    let r = root("vendors");
    let amd = "card0/device";
    put(
        &r,
        &format!("{amd}/uevent"),
        "DRIVER=amdgpu\nPCI_ID=1002:73BF\nPCI_SLOT_NAME=0000:03:00.0\n",
    );
    put(&r, &format!("{amd}/gpu_busy_percent"), "87\n");
    put(&r, &format!("{amd}/mem_info_vram_used"), "3221225472\n");
    put(&r, &format!("{amd}/mem_info_vram_total"), "17163091968\n");
    put(&r, &format!("{amd}/hwmon/hwmon3/temp1_input"), "71000\n");
    put(
        &r,
        &format!("{amd}/hwmon/hwmon3/power1_average"),
        "212000000\n",
    );
    put(&r, &format!("{amd}/hwmon/hwmon3/power1_cap"), "300000000\n");
    put(
        &r,
        &format!("{amd}/hwmon/hwmon3/freq1_input"),
        "2250000000\n",
    );
    put(
        &r,
        &format!("{amd}/hwmon/hwmon3/freq2_input"),
        "1000000000\n",
    );
    put(
        &r,
        "card1/device/uevent",
        "DRIVER=i915\nPCI_ID=8086:56A0\nPCI_SLOT_NAME=0000:04:00.0\n",
    );
    put(&r, "card1/gt_act_freq_mhz", "2050\n");
    put(&r, "card1/gt/gt0/throttle_reason_status", "1\n");
    let adapters = vec![
        common::fake_adapter(
            "AMD Radeon RX 6800 XT",
            0x1002,
            0x73bf,
            DeviceKind::Discrete,
            BackendKind::Vulkan,
            "0000:03:00.0",
        ),
        common::fake_adapter(
            "Intel Arc A770",
            0x8086,
            0x56a0,
            DeviceKind::Discrete,
            BackendKind::Vulkan,
            "0000:04:00.0",
        ),
        common::fake_adapter(
            "llvmpipe",
            0x10005,
            0,
            DeviceKind::Software,
            BackendKind::Vulkan,
            "",
        ),
    ];
    let rows = Monitor::with_adapters(adapters, &r).sample();
    let text = render(&rows, &Health::default());
    let amd_l =
        "name=\"AMD Radeon RX 6800 XT\",vendor=\"AMD\",backend=\"vulkan\",kind=\"discrete\"";
    assert_eq!(
        sample(&text, "suanli_device_utilization_ratio", amd_l),
        Some(0.87)
    );
    assert_eq!(
        sample(&text, "suanli_device_memory_used_bytes", amd_l),
        Some(3221225472.0)
    );
    assert_eq!(
        sample(&text, "suanli_device_temperature_celsius", amd_l),
        Some(71.0)
    );
    assert_eq!(
        sample(&text, "suanli_device_power_watts", amd_l),
        Some(212.0)
    );
    assert_eq!(
        sample(&text, "suanli_device_power_limit_watts", amd_l),
        Some(300.0)
    );
    assert_eq!(
        sample(&text, "suanli_device_graphics_clock_hertz", amd_l),
        Some(2.25e9)
    );
    assert_eq!(
        sample(&text, "suanli_device_memory_clock_hertz", amd_l),
        Some(1e9)
    );
    let intel_l = "name=\"Intel Arc A770\",vendor=\"Intel\"";
    assert_eq!(
        sample(&text, "suanli_device_graphics_clock_hertz", intel_l),
        Some(2.05e9)
    );
    assert_eq!(sample(&text, "suanli_device_throttled", intel_l), Some(1.0));
    // Intel exposes no temperature here, the software adapter nothing: no sample, no zero.
    assert_eq!(
        sample(&text, "suanli_device_temperature_celsius", intel_l),
        None
    );
    assert!(
        !text
            .lines()
            .any(|l| l.contains("llvmpipe") && !l.starts_with("suanli_device_info")),
        "{text}"
    );
    assert!(text.contains("suanli_device_info{") && text.contains("source=\"amdgpu sysfs\""));
    assert_eq!(sample(&text, "suanli_devices", ""), Some(3.0));
    let _ = fs::remove_dir_all(&r);
}

#[test]
fn a_failing_sensor_gives_no_sample_and_counts_an_error() {
    let r = root("failing");
    let amd = "card0/device";
    put(
        &r,
        &format!("{amd}/uevent"),
        "DRIVER=amdgpu\nPCI_ID=1002:73BF\nPCI_SLOT_NAME=0000:03:00.0\n",
    );
    put(&r, &format!("{amd}/gpu_busy_percent"), "40\n");
    put(
        &r,
        &format!("{amd}/hwmon/hwmon0/temp1_input"),
        "not a number\n",
    );
    let a = common::fake_adapter(
        "AMD Radeon",
        0x1002,
        0x73bf,
        DeviceKind::Discrete,
        BackendKind::Vulkan,
        "0000:03:00.0",
    );
    let rows = Monitor::with_adapters(vec![a], &r).sample();
    assert_eq!(rows[0].reading.errors, 1, "{:?}", rows[0].reading);
    assert_eq!(rows[0].reading.temperature_c, None);
    let mut health = Health::default();
    health.sensor_errors.insert("amdgpu sysfs".into(), 1);
    let text = render(&rows, &health);
    assert_eq!(sample(&text, "suanli_device_temperature_celsius", ""), None);
    assert_eq!(
        sample(&text, "suanli_device_utilization_ratio", "AMD Radeon"),
        Some(0.4)
    );
    assert_eq!(
        sample(
            &text,
            "suanli_sensor_errors_total",
            "source=\"amdgpu sysfs\""
        ),
        Some(1.0)
    );
    // A missing file is no error.
    fs::remove_file(r.join(format!("{amd}/hwmon/hwmon0/temp1_input"))).unwrap();
    let a = common::fake_adapter(
        "AMD Radeon",
        0x1002,
        0x73bf,
        DeviceKind::Discrete,
        BackendKind::Vulkan,
        "0000:03:00.0",
    );
    assert_eq!(
        Monitor::with_adapters(vec![a], &r).sample()[0]
            .reading
            .errors,
        0
    );
    let _ = fs::remove_dir_all(&r);
}

#[test]
fn processes_come_from_drm_fdinfo_one_client_counted_once() {
    let r = root("proc");
    let amd = "drm-driver:\tamdgpu\ndrm-pdev:\t0000:03:00.0\ndrm-client-id:\t7\ndrm-engine-gfx:\t1000 ns\ndrm-engine-compute:\t500 ns\ndrm-memory-vram:\t2048 KiB\ndrm-memory-gtt:\t4 KiB\ndrm-total-vram:\t3 MiB\n";
    // pid 100: the same amdgpu client through two fds, and an i915 client.
    put(&r, "100/comm", "trainer\n");
    put(&r, "100/fdinfo/5", amd);
    put(&r, "100/fdinfo/6", amd);
    put(&r, "100/fdinfo/7", "drm-driver:\ti915\ndrm-pdev:\t0000:04:00.0\ndrm-client-id:\t3\ndrm-engine-render:\t250 ns\ndrm-engine-capacity-render:\t1\ndrm-total-local0:\t1024\ndrm-total-system0:\t4096\n");
    put(&r, "100/fdinfo/0", "pos:\t0\nflags:\t02\n");
    // pid 200: a second amdgpu client (memory only in the older key).
    put(&r, "200/comm", "smi\n");
    put(&r, "200/fdinfo/3", "drm-driver:\tamdgpu\ndrm-pdev:\t0000:03:00.0\ndrm-client-id:\t9\ndrm-memory-vram:\t1 MiB\n");
    put(&r, "self/comm", "not a pid\n");
    let ps = suanli::telemetry::drm_processes(&r);
    assert_eq!(ps.len(), 3, "{ps:?}");
    let trainer_amd = &ps[0];
    assert_eq!(
        (
            trainer_amd.pid,
            trainer_amd.name.as_str(),
            trainer_amd.pci_bus_id.as_str()
        ),
        (100, "trainer", "0000:03:00.0")
    );
    assert_eq!(trainer_amd.clients, 1);
    assert_eq!(trainer_amd.engine_ns, Some(1500));
    assert_eq!(trainer_amd.memory_bytes, Some(3 << 20)); // drm-total wins over drm-memory
    assert_eq!(ps[1].pid, 200);
    assert_eq!(ps[1].memory_bytes, Some(1 << 20));
    assert_eq!(ps[1].engine_ns, None);
    let intel = &ps[2];
    assert_eq!(
        (intel.driver.as_str(), intel.engine_ns, intel.memory_bytes),
        ("i915", Some(250), Some(1024))
    );
    assert!(suanli::telemetry::drm_processes(&r.join("absent")).is_empty());
    let _ = fs::remove_dir_all(&r);
}
