//! Discovery, classification, spec parsing, visible-devices renumbering, config precedence.

mod common;

use std::collections::HashMap;

use suanli::config::{parse_bytes, parse_visible, Config, Overrides};
use suanli::device::{arrange, select};
use suanli::{AdapterDesc, BackendKind, DeviceKind, DeviceSpec, Error, Vendor};

fn fake(
    name: &str,
    vendor_id: u32,
    kind: DeviceKind,
    backend: BackendKind,
    pci: &str,
) -> AdapterDesc {
    common::fake_adapter(name, vendor_id, 0x1234, kind, backend, pci)
}

/// A machine with an Intel iGPU, an NVIDIA dGPU seen through Vulkan and GL, lavapipe on
/// Vulkan and GL, listed in a scrambled order.
fn machine() -> Vec<AdapterDesc> {
    vec![
        fake(
            "llvmpipe (LLVM 15)",
            0x10005,
            DeviceKind::Software,
            BackendKind::Gl,
            "",
        ),
        fake(
            "Intel(R) UHD 770",
            0x8086,
            DeviceKind::Integrated,
            BackendKind::Vulkan,
            "0000:00:02.0",
        ),
        fake(
            "NVIDIA GeForce RTX 4090",
            0x10DE,
            DeviceKind::Discrete,
            BackendKind::Gl,
            "0000:01:00.0",
        ),
        fake(
            "llvmpipe (LLVM 15)",
            0x10005,
            DeviceKind::Software,
            BackendKind::Vulkan,
            "",
        ),
        fake(
            "NVIDIA GeForce RTX 4090",
            0x10DE,
            DeviceKind::Discrete,
            BackendKind::Vulkan,
            "0000:01:00.0",
        ),
    ]
}

type Row = (String, Option<usize>, Option<usize>, BackendKind, usize);

#[test]
fn arrange_orders_discrete_first_and_dedupes_backends() {
    let a = arrange(machine(), None).unwrap();
    let summary: Vec<Row> = a
        .iter()
        .map(|d| {
            (
                d.name.clone(),
                d.gpu_index,
                d.software_index,
                d.backend,
                d.backend_index,
            )
        })
        .collect();
    assert_eq!(
        a.iter().map(|d| d.index).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4]
    );
    // gpu:0 is the discrete NVIDIA on Vulkan; its GL alias has no gpu index.
    assert_eq!(summary[0].0, "NVIDIA GeForce RTX 4090");
    assert_eq!((summary[0].1, summary[0].3), (Some(0), BackendKind::Vulkan));
    assert_eq!((summary[1].1, summary[1].3), (None, BackendKind::Gl));
    assert_eq!(summary[2].0, "Intel(R) UHD 770");
    assert_eq!(summary[2].1, Some(1));
    // Software last: cpu:0 on Vulkan, its GL alias without a cpu index.
    assert_eq!((summary[3].2, summary[3].3), (Some(0), BackendKind::Vulkan));
    assert_eq!((summary[4].2, summary[4].3), (None, BackendKind::Gl));
    assert_eq!(a[0].vendor, Vendor::Nvidia);
    assert_eq!(a[2].vendor, Vendor::Intel);
    assert_eq!(a[3].vendor, Vendor::Software);
    assert!(!a[3].is_gpu());
    // Backend-local numbering.
    assert_eq!(
        a.iter()
            .filter(|d| d.backend == BackendKind::Vulkan)
            .map(|d| d.backend_index)
            .collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    assert_eq!(
        a.iter()
            .filter(|d| d.backend == BackendKind::Gl)
            .map(|d| d.backend_index)
            .collect::<Vec<_>>(),
        vec![0, 1]
    );
}

#[test]
fn select_by_every_spec_form() {
    let a = arrange(machine(), None).unwrap();
    let pick = |s: &str| a[select(&s.parse().unwrap(), &a).unwrap()].clone();
    assert_eq!(pick("auto").name, "NVIDIA GeForce RTX 4090");
    assert_eq!(pick("gpu:0").backend, BackendKind::Vulkan);
    assert_eq!(pick("gpu:1").name, "Intel(R) UHD 770");
    assert_eq!(pick("cpu").kind, DeviceKind::Software);
    assert_eq!(pick("software:0").backend, BackendKind::Vulkan);
    assert_eq!(pick("gl:0").name, "NVIDIA GeForce RTX 4090");
    assert_eq!(pick("gl:1").name, "llvmpipe (LLVM 15)");
    assert_eq!(pick("vulkan:1").name, "Intel(R) UHD 770");
    assert_eq!(pick("uhd").name, "Intel(R) UHD 770");
    assert_eq!(pick("name:rtx 4090").gpu_index, Some(0));
    match select(&DeviceSpec::Gpu(2), &a) {
        Err(Error::DeviceNotFound { spec, available }) => {
            assert_eq!(spec, "gpu:2");
            assert!(
                available.contains("gpu:1") && available.contains("cpu:0"),
                "{available}"
            );
        }
        other => panic!("expected DeviceNotFound, got {other:?}"),
    }
    assert!(matches!(
        select(&DeviceSpec::Backend(BackendKind::Metal, 0), &a),
        Err(Error::DeviceNotFound { .. })
    ));
}

#[test]
fn auto_falls_back_to_software_and_empty_says_how_to_get_a_driver() {
    let sw_only: Vec<AdapterDesc> = machine()
        .into_iter()
        .filter(|d| d.kind == DeviceKind::Software)
        .collect();
    let a = arrange(sw_only, None).unwrap();
    assert_eq!(
        a[select(&DeviceSpec::Auto, &a).unwrap()].backend,
        BackendKind::Vulkan
    );
    assert!(matches!(
        select(&DeviceSpec::Gpu(0), &a),
        Err(Error::DeviceNotFound { .. })
    ));
    let err = select(&DeviceSpec::Auto, &[]).unwrap_err();
    assert!(matches!(err, Error::NoAdapter { .. }));
    assert!(
        err.to_string()
            .contains("apt-get install mesa-vulkan-drivers"),
        "{err}"
    );
}

#[test]
fn visible_devices_hide_and_renumber() {
    // Only the Intel GPU (full index 1) visible: it becomes gpu:0, NVIDIA disappears with its alias.
    let a = arrange(machine(), Some(&[1])).unwrap();
    assert!(a.iter().all(|d| !d.name.contains("NVIDIA")));
    assert_eq!(a[0].name, "Intel(R) UHD 770");
    assert_eq!(a[0].gpu_index, Some(0));
    assert_eq!(
        a[select(&DeviceSpec::Auto, &a).unwrap()].name,
        "Intel(R) UHD 770"
    );
    // Reordered: "1,0" makes Intel gpu:0 and NVIDIA gpu:1.
    let a = arrange(machine(), Some(&[1, 0])).unwrap();
    assert_eq!(
        a[select(&DeviceSpec::Gpu(0), &a).unwrap()].name,
        "Intel(R) UHD 770"
    );
    assert_eq!(
        a[select(&DeviceSpec::Gpu(1), &a).unwrap()].name,
        "NVIDIA GeForce RTX 4090"
    );
    // None visible: software remains, auto falls back to it.
    let a = arrange(machine(), Some(&[])).unwrap();
    assert!(a.iter().all(|d| d.kind == DeviceKind::Software));
    assert_eq!(
        a[select(&DeviceSpec::Auto, &a).unwrap()].software_index,
        Some(0)
    );
    // Out of range is an error naming the count.
    let err = arrange(machine(), Some(&[5])).unwrap_err();
    assert!(err.to_string().contains("only 2 hardware GPU(s)"), "{err}");
}

#[test]
fn spec_parsing() {
    let ok = [
        ("auto", DeviceSpec::Auto),
        (" AUTO ", DeviceSpec::Auto),
        ("gpu", DeviceSpec::Gpu(0)),
        ("gpu:3", DeviceSpec::Gpu(3)),
        ("/GPU:1", DeviceSpec::Gpu(1)),
        ("cpu", DeviceSpec::Software(0)),
        ("software:1", DeviceSpec::Software(1)),
        ("vulkan:2", DeviceSpec::Backend(BackendKind::Vulkan, 2)),
        ("metal", DeviceSpec::Backend(BackendKind::Metal, 0)),
        ("dx12:0", DeviceSpec::Backend(BackendKind::Dx12, 0)),
        ("gl:1", DeviceSpec::Backend(BackendKind::Gl, 1)),
        ("llvmpipe", DeviceSpec::Name("llvmpipe".into())),
        (
            "name:AMD Radeon: Pro",
            DeviceSpec::Name("AMD Radeon: Pro".into()),
        ),
    ];
    for (s, want) in ok {
        assert_eq!(s.parse::<DeviceSpec>().unwrap(), want, "{s:?}");
        // Display round-trips.
        assert_eq!(want.to_string().parse::<DeviceSpec>().unwrap(), want);
    }
    for bad in [
        "", "  ", "gpu:", "gpu:-1", "gpu:x", "cpu:1.5", "auto:0", "tpu:0", "name:",
    ] {
        match bad.parse::<DeviceSpec>() {
            Err(Error::InvalidDeviceSpec { spec, .. }) => assert_eq!(spec, bad),
            other => panic!("{bad:?} should be rejected, got {other:?}"),
        }
    }
}

#[test]
fn byte_sizes_and_visible_lists() {
    assert_eq!(parse_bytes("512MiB").unwrap(), 512 << 20);
    assert_eq!(parse_bytes("2GiB").unwrap(), 2 << 30);
    assert_eq!(parse_bytes("1.5 GiB").unwrap(), 3 << 29);
    assert_eq!(parse_bytes("64k").unwrap(), 65536);
    assert_eq!(parse_bytes("3GB").unwrap(), 3_000_000_000);
    assert_eq!(parse_bytes("4096").unwrap(), 4096);
    for bad in ["", "GiB", "-1GiB", "0", "12 parsecs", "1e3"] {
        assert!(parse_bytes(bad).is_err(), "{bad:?}");
    }
    assert_eq!(parse_visible("0, 2").unwrap(), vec![0, 2]);
    assert_eq!(parse_visible("").unwrap(), Vec::<usize>::new());
    assert_eq!(parse_visible("-1").unwrap(), Vec::<usize>::new());
    assert!(parse_visible("0,0").is_err());
    assert!(parse_visible("a").is_err());
}

fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn config_precedence_api_env_file() {
    let file = "device = \"gpu:2\"\nvisible_devices = [0, 2, 3]\nmemory_limit = \"4GiB\"\n";
    // File only.
    let c = Config::resolve(&Overrides::default(), &env(&[]), Some(file), "suanli.toml").unwrap();
    assert_eq!(c.device, Some(DeviceSpec::Gpu(2)));
    assert_eq!(c.visible_devices, Some(vec![0, 2, 3]));
    assert_eq!(c.memory_limit, Some(4 << 30));
    // Environment beats file.
    let e = env(&[
        ("SUANLI_DEVICE", "cpu"),
        ("SUANLI_VISIBLE_DEVICES", "1"),
        ("SUANLI_MEMORY_LIMIT", "512MiB"),
    ]);
    let c = Config::resolve(&Overrides::default(), &e, Some(file), "suanli.toml").unwrap();
    assert_eq!(c.device, Some(DeviceSpec::Software(0)));
    assert_eq!(c.visible_devices, Some(vec![1]));
    assert_eq!(c.memory_limit, Some(512 << 20));
    // API beats both.
    let api = Overrides {
        device: Some(DeviceSpec::Gpu(0)),
        visible_devices: Some(vec![0]),
        memory_limit: Some(1000),
        ..Default::default()
    };
    let c = Config::resolve(&api, &e, Some(file), "suanli.toml").unwrap();
    assert_eq!(c.device, Some(DeviceSpec::Gpu(0)));
    assert_eq!(c.visible_devices, Some(vec![0]));
    assert_eq!(c.memory_limit, Some(1000));
    // WGPU_ADAPTER_NAME is a name spec below SUANLI_DEVICE, above the file.
    let c = Config::resolve(
        &Overrides::default(),
        &env(&[("WGPU_ADAPTER_NAME", "RTX")]),
        Some(file),
        "f",
    )
    .unwrap();
    assert_eq!(c.device, Some(DeviceSpec::Name("RTX".into())));
    let c = Config::resolve(
        &Overrides::default(),
        &env(&[("WGPU_ADAPTER_NAME", "RTX"), ("SUANLI_DEVICE", "gpu:1")]),
        None,
        "",
    )
    .unwrap();
    assert_eq!(c.device, Some(DeviceSpec::Gpu(1)));
    // Nothing set.
    assert_eq!(
        Config::resolve(&Overrides::default(), &env(&[]), None, "").unwrap(),
        Config::default()
    );
}

#[test]
fn config_errors_name_key_value_and_source() {
    let e = env(&[("SUANLI_MEMORY_LIMIT", "lots")]);
    let err = Config::resolve(&Overrides::default(), &e, None, "").unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("SUANLI_MEMORY_LIMIT") && msg.contains("lots") && msg.contains("environment"),
        "{msg}"
    );
    let err = Config::resolve(
        &Overrides::default(),
        &env(&[]),
        Some("memory_limit = \"x\""),
        "my.toml",
    )
    .unwrap_err();
    assert!(err.to_string().contains("my.toml"), "{err}");
    let err = Config::resolve(
        &Overrides::default(),
        &env(&[]),
        Some("devcie = \"gpu\""),
        "my.toml",
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("devcie"),
        "unknown keys are rejected: {err}"
    );
    let err = Config::resolve(
        &Overrides::default(),
        &env(&[("SUANLI_DEVICE", "gpu:x")]),
        None,
        "",
    )
    .unwrap_err();
    assert!(matches!(err, Error::InvalidDeviceSpec { .. }));
    let err = Config::resolve(
        &Overrides::default(),
        &env(&[]),
        Some("device = \"tpu:1\""),
        "f",
    )
    .unwrap_err();
    assert!(matches!(err, Error::InvalidDeviceSpec { .. }));
}

#[test]
fn discovery_on_this_machine_classifies_software_honestly() {
    let _ = dev_or_skip!();
    let list = suanli::devices().unwrap();
    assert!(!list.is_empty());
    for d in &list {
        let lname = d.name.to_ascii_lowercase();
        if lname.contains("llvmpipe") || lname.contains("swiftshader") || lname.contains("lavapipe")
        {
            assert_eq!(d.kind, DeviceKind::Software, "{d:?}");
            assert_eq!(d.vendor, Vendor::Software);
            assert!(d.gpu_index.is_none() && !d.is_gpu());
        }
        assert!(d.limits.max_buffer_size > 0 && d.limits.max_invocations >= 64);
    }
    assert_eq!(
        suanli::is_gpu_available(),
        list.iter().any(|d| d.gpu_index.is_some())
    );
    // The test device's own classification agrees with the table.
    let dev = common::device().unwrap();
    assert_eq!(dev.is_gpu(), dev.info().gpu_index.is_some());
    if std::env::var_os("CI").is_some() && !suanli::is_gpu_available() {
        assert!(
            list.iter().any(|d| d.kind == DeviceKind::Software),
            "CI needs lavapipe"
        );
    }
}

#[test]
fn open_errors_are_typed() {
    let _ = dev_or_skip!();
    match suanli::Device::open("gpu:17") {
        Err(Error::DeviceNotFound { available, .. }) => assert!(!available.is_empty()),
        other => panic!("expected DeviceNotFound, got {other:?}"),
    }
    assert!(matches!(
        suanli::Device::open("gpu:zz"),
        Err(Error::InvalidDeviceSpec { .. })
    ));
    assert!(matches!(
        suanli::Device::open("no such adapter name"),
        Err(Error::DeviceNotFound { .. })
    ));
}

#[test]
fn limits_come_from_the_file_per_device_and_the_environment_beats_it() {
    let file =
        "max_temperature_c = 83\npower_cap_w = 300\n[limits.\"GPU:1\"]\nmax_temperature_c = 75\n";
    let c = Config::resolve(
        &Overrides::default(),
        &std::collections::HashMap::new(),
        Some(file),
        "t.toml",
    )
    .unwrap();
    let g1 = c.limits.for_device("gpu:1");
    assert_eq!(g1.max_temperature_c, Some(75.0));
    assert_eq!(g1.power_cap_w, Some(300.0));
    assert_eq!(c.limits.for_device("gpu:0").max_temperature_c, Some(83.0));
    // The environment beats the file; a device's own entry beats "every device" only
    // within one source.
    let e = std::collections::HashMap::from([(
        "SUANLI_MAX_TEMPERATURE_C".to_string(),
        "70".to_string(),
    )]);
    let c = Config::resolve(&Overrides::default(), &e, Some(file), "t.toml").unwrap();
    assert_eq!(c.limits.for_device("gpu:1").max_temperature_c, Some(70.0));
    for bad in [
        "[limits.\"gpu:0\"]\nmax_temp = 80\n",
        "[limits.\"name:RTX\"]\nmax_temperature_c = 80\n",
        "power_cap_w = -3\n",
    ] {
        let e = Config::resolve(
            &Overrides::default(),
            &std::collections::HashMap::new(),
            Some(bad),
            "t.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("t.toml") || e.contains("expected"), "{bad}: {e}");
    }
}
