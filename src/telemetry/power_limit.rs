//! Setting a board's own power limit: an explicit opt-in for operators, never done by the
//! governor on its own (the governor only paces suanli's work). NVIDIA through NVML
//! (`nvmlDeviceSetPowerManagementLimit`), AMD through amdgpu's hwmon `power1_cap`
//! (microwatts, within `power1_cap_min`..`power1_cap_max`). Both need root; a refusal is an
//! error that says so, and nothing is changed.

use std::path::Path;

use serde::Serialize;

use crate::device::adapter::AdapterDesc;
#[cfg(feature = "nvml")]
use crate::device::adapter::Vendor;
use crate::error::{Error, Result};
use crate::telemetry::{card_for, DRM_ROOT};

/// What a [`set_power_limit`] changed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PowerLimitChange {
    /// The limit before, W (where it could be read).
    pub before_w: Option<f64>,
    /// The limit now, W.
    pub after_w: f64,
    /// The range the board accepts, W (where it tells).
    pub range_w: Option<(f64, f64)>,
    /// How it was set: `"nvml"` or the `power1_cap` file's path.
    pub via: String,
}

/// Sets `desc`'s board power limit to `watts` (see the module docs).
pub fn set_power_limit(desc: &AdapterDesc, watts: f64) -> Result<PowerLimitChange> {
    set_power_limit_in(Path::new(DRM_ROOT), desc, watts)
}

fn refused(desc: &AdapterDesc, watts: f64, expected: String) -> Error {
    Error::InvalidArgument {
        op: "set_power_limit",
        name: "watts",
        expected,
        found: format!("{watts} W for {} ({})", desc.spec(), desc.name),
    }
}

/// [`set_power_limit`] with the DRM cards looked up under `drm_root` (tests point it at a
/// fixture tree).
pub fn set_power_limit_in(
    drm_root: &Path,
    desc: &AdapterDesc,
    watts: f64,
) -> Result<PowerLimitChange> {
    if !(watts.is_finite() && watts > 0.0) {
        return Err(refused(
            desc,
            watts,
            "a power limit in W greater than 0".into(),
        ));
    }
    if !desc.kind.is_hardware() {
        return Err(refused(
            desc,
            watts,
            "a hardware GPU (a software adapter has no power limit)".into(),
        ));
    }
    #[cfg(feature = "nvml")]
    if desc.vendor == Vendor::Nvidia {
        let pci = crate::telemetry::reading::PciAddress::parse(&desc.pci_bus_id)
            .ok_or_else(|| refused(desc, watts, "an NVIDIA GPU with a PCI address".into()))?;
        let (before, range) = crate::telemetry::nvml::set_power_limit(pci, watts)
            .map_err(|why| refused(desc, watts, why))?;
        log::info!(
            "{}: board power limit {before:.0} W → {watts:.0} W (NVML)",
            desc.spec()
        );
        return Ok(PowerLimitChange {
            before_w: Some(before),
            after_w: watts,
            range_w: Some(range),
            via: "nvml".into(),
        });
    }
    let card = card_for(drm_root, desc).ok_or_else(|| {
        refused(
            desc,
            watts,
            "a GPU whose driver lets the power limit be set (NVML, amdgpu power1_cap)".into(),
        )
    })?;
    let hwmon = std::fs::read_dir(card.dir.join("device/hwmon"))
        .ok()
        .and_then(|rd| {
            let mut v: Vec<_> = rd.flatten().map(|e| e.path()).collect();
            v.sort();
            v.into_iter().find(|p| p.join("power1_cap").exists())
        })
        .ok_or_else(|| {
            refused(
                desc,
                watts,
                format!(
                    "a driver with a hwmon power1_cap ({} has none)",
                    card.driver
                ),
            )
        })?;
    let read_w = |name: &str| -> Option<f64> {
        let t = std::fs::read_to_string(hwmon.join(name)).ok()?;
        Some(t.trim().parse::<f64>().ok()? / 1e6)
    };
    let range = read_w("power1_cap_min").zip(read_w("power1_cap_max"));
    if let Some((lo, hi)) = range {
        if !(lo..=hi).contains(&watts) {
            return Err(refused(
                desc,
                watts,
                format!("a limit within the board's range {lo}-{hi} W"),
            ));
        }
    }
    let before = read_w("power1_cap");
    let path = hwmon.join("power1_cap");
    std::fs::write(&path, format!("{}\n", (watts * 1e6).round() as u64)).map_err(|e| {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            refused(
                desc,
                watts,
                format!("write access to {} (run as root)", path.display()),
            )
        } else {
            Error::io(&path, e)
        }
    })?;
    log::info!(
        "{}: board power limit {} → {watts:.0} W ({})",
        desc.spec(),
        before.map_or("unknown".into(), |b| format!("{b:.0} W")),
        path.display()
    );
    Ok(PowerLimitChange {
        before_w: before,
        after_w: watts,
        range_w: range,
        via: path.display().to_string(),
    })
}
