//! Lists every adapter suanli can see, like `nvidia-smi -L` plus the limits that matter for
//! compute, and marks the one `auto` (or `SUANLI_DEVICE`) would pick.
//!
//! ```text
//! cargo run --release --example devices
//! SUANLI_VISIBLE_DEVICES=1 WGPU_BACKEND=vulkan cargo run --release --example devices
//! ```

use suanli::config::Config;
use suanli::device::{format_table, select};
use suanli::DeviceSpec;

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> suanli::Result<()> {
    let config = Config::from_env()?;
    let adapters = suanli::device::devices_with(&config)?;
    let spec = config.device.clone().unwrap_or(DeviceSpec::Auto);
    let picked = select(&spec, &adapters).ok();
    println!(
        "suanli adapters ({} found; * = what `{spec}` picks):",
        adapters.len()
    );
    print!("{}", format_table(&adapters, picked));
    for d in &adapters {
        println!(
            "  [{}] {} | vendor 0x{:04x} device 0x{:04x} | driver {} {} | pci {:?} | wg storage {} KiB | wg size {:?} | groups/dim {}",
            d.index,
            d.name,
            d.vendor_id,
            d.device_id,
            d.driver,
            d.driver_info,
            d.pci_bus_id,
            d.limits.max_workgroup_storage / 1024,
            d.limits.max_workgroup_size,
            d.limits.max_workgroups_per_dimension
        );
    }
    if let Some(limit) = config.memory_limit {
        println!("memory limit per device: {limit} bytes");
    }
    let gpu = adapters.iter().any(|d| d.gpu_index.is_some());
    if gpu {
        println!("hardware GPU available: yes");
    } else if adapters.is_empty() {
        println!("hardware GPU available: no, and no software adapter either");
    } else {
        println!("hardware GPU available: no (only software adapters; work runs on the CPU)");
    }
    Ok(())
}
