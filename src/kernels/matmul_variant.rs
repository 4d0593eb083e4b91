//! The matmul kernels and what each can do: the entry points of `matmul.wgsl` (naive and
//! shared-memory tiled) and `matmul_subgroup.wgsl` (subgroup-broadcast kernels for 8-lane
//! subgroups), the [`Variant`] that names a configuration, which adapters can run it, its grid,
//! and which kernel a given shape should use.
//!
//! Real GPUs want shared-memory tiles ([`Variant::Tiled`]); lavapipe, where every per-lane
//! load is a scalar loop, wants loads shared through subgroup broadcasts and tall per-lane
//! tiles ([`Variant::Subgroup8`], eligible only when the adapter's subgroup size is exactly 8).
//! Which eligible candidate is fastest on a device is measured by [`crate::kernels::matmul_tune`].

use crate::device::adapter::AdapterDesc;
use crate::exec::pipeline::{Access, KernelSpec, Shader};
use crate::vocab::Layout;

/// matmul.wgsl, after the activation and optimizer-rule preludes.
pub const SHADER: Shader = crate::shader!("matmul" after "activation", "optim_rule");
/// matmul_subgroup.wgsl, after the preludes and matmul.wgsl (whose helpers it uses).
pub const SHADER_SUBGROUP: Shader =
    crate::shader!("matmul_subgroup" after "activation", "optim_rule", "matmul");

/// The bindings every matmul entry point declares.
const BINDINGS: &[Access] = &[
    Access::ReadOnly,  // a
    Access::ReadOnly,  // b
    Access::ReadWrite, // aux: bias, column sums or gate (a dummy when unused)
    Access::ReadWrite, // c
    Access::ReadWrite, // st1: C's first optimizer state (a dummy without an update)
    Access::ReadWrite, // st2: C's second optimizer state
    Access::ReadWrite, // bst1: the bias's first optimizer state
    Access::ReadWrite, // bst2: the bias's second optimizer state
    Access::Uniform,   // params
];

/// Storage buffers a matmul binds (the kernels declare eight).
pub const STORAGE_BINDINGS: u32 = 8;

/// One output per invocation: the baseline.
pub const NAIVE: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "matmul_naive_forward",
    bindings: BINDINGS,
};
/// 64×64 shared-memory tiles, 4×4 per invocation: for hardware GPUs.
pub const TILED: KernelSpec = KernelSpec {
    shader: SHADER,
    entry: "matmul_tiled_forward",
    bindings: BINDINGS,
};
const fn sg(entry: &'static str) -> KernelSpec {
    KernelSpec {
        shader: SHADER_SUBGROUP,
        entry,
        bindings: BINDINGS,
    }
}
/// Subgroup-broadcast kernel for 8-lane subgroups (lavapipe), 16 rows per work-group.
pub const SUBGROUP8_R16: KernelSpec = sg("matmul_sg8_r16_forward");
/// The same with 32 rows per work-group.
pub const SUBGROUP8_R32: KernelSpec = sg("matmul_sg8_r32_forward");
/// 16-byte-load twin (N a multiple of 4, and K for NN and NT, M for TN), 16 rows.
pub const SUBGROUP8_VEC4_R16: KernelSpec = sg("matmul_sg8v4_r16_forward");
/// 16-byte-load twin, 32 rows.
pub const SUBGROUP8_VEC4_R32: KernelSpec = sg("matmul_sg8v4_r32_forward");
/// At most 16 columns: a lane per row of C, each column in its own accumulator.
pub const SUBGROUP8_NARROW: KernelSpec = sg("matmul_sg8_narrow_forward");
/// K at most 16: a lane per column of C, op(B)'s column in registers.
pub const SUBGROUP8_SHALLOW: KernelSpec = sg("matmul_sg8_shallow_forward");

/// Every entry point of this family.
pub const KERNELS: &[KernelSpec] = &[
    NAIVE,
    TILED,
    SUBGROUP8_R16,
    SUBGROUP8_R32,
    SUBGROUP8_VEC4_R16,
    SUBGROUP8_VEC4_R32,
    SUBGROUP8_NARROW,
    SUBGROUP8_SHALLOW,
];

/// A matmul kernel configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// [`NAIVE`].
    Naive,
    /// [`TILED`].
    Tiled,
    /// The subgroup kernels with this many rows per work-group (16 or 32).
    Subgroup8 {
        /// Rows of C per work-group.
        rows: u32,
    },
    /// The subgroup kernel for C with at most 16 columns ([`SUBGROUP8_NARROW`]); not a tuner
    /// candidate: [`Variant::for_shape`] picks it for narrow products.
    Subgroup8Narrow,
    /// The subgroup kernel for K at most 16 ([`SUBGROUP8_SHALLOW`]); picked by
    /// [`Variant::for_shape`] for shallow products.
    Subgroup8Shallow,
}

/// The most columns [`Variant::Subgroup8Narrow`] handles, and the deepest K
/// [`Variant::Subgroup8Shallow`] does.
pub const NARROW: u32 = 16;
/// Rows of C per work-group of the shallow kernel (`SHALLOW_ROWS` in the WGSL).
const SHALLOW_ROWS: u32 = 32;

/// Whether the aligned vec4 twin of the subgroup kernel applies to a product of this layout
/// and shape (the rows it loads are whole 16-byte words).
pub fn vec4_ok(layout: Layout, m: u32, n: u32, k: u32) -> bool {
    match layout {
        Layout::NN | Layout::NT => k.is_multiple_of(4) && n.is_multiple_of(4),
        Layout::TN => m.is_multiple_of(4) && n.is_multiple_of(4),
    }
}

impl Variant {
    /// The names [`Variant::parse`] accepts (what `SUANLI_MATMUL` may force).
    pub const NAMES: &'static [&'static str] = &["naive", "tiled", "sg8x16", "sg8x32"];

    /// Parses the names used by `SUANLI_MATMUL` and the tuning cache.
    pub fn parse(s: &str) -> Option<Variant> {
        match s.trim() {
            "naive" => Some(Variant::Naive),
            "tiled" => Some(Variant::Tiled),
            "sg8x16" => Some(Variant::Subgroup8 { rows: 16 }),
            "sg8x32" => Some(Variant::Subgroup8 { rows: 32 }),
            _ => None,
        }
    }

    /// The name [`Variant::parse`] reads.
    pub fn name(self) -> String {
        match self {
            Variant::Naive => "naive".into(),
            Variant::Tiled => "tiled".into(),
            Variant::Subgroup8 { rows } => format!("sg8x{rows}"),
            Variant::Subgroup8Narrow => "sg8narrow".into(),
            Variant::Subgroup8Shallow => "sg8shallow".into(),
        }
    }

    /// Whether an adapter can run this variant (pure: tested with made-up adapters).
    pub fn eligible(self, info: &AdapterDesc) -> bool {
        let l = &info.limits;
        match self {
            Variant::Naive | Variant::Tiled => {
                l.max_invocations >= 256 && l.max_workgroup_storage >= 8192
            }
            Variant::Subgroup8 { rows } => {
                info.features.subgroups && l.subgroup_size == (8, 8) && matches!(rows, 16 | 32)
            }
            Variant::Subgroup8Narrow | Variant::Subgroup8Shallow => {
                Variant::Subgroup8 { rows: 16 }.eligible(info)
            }
        }
    }

    /// The entry point this variant runs (`vec4`: the 16-byte-load twin, see [`vec4_ok`]).
    pub fn spec(self, vec4: bool) -> &'static KernelSpec {
        match (self, vec4) {
            (Variant::Naive, _) => &NAIVE,
            (Variant::Tiled, _) => &TILED,
            (Variant::Subgroup8 { rows: 16 }, false) => &SUBGROUP8_R16,
            (Variant::Subgroup8 { .. }, false) => &SUBGROUP8_R32,
            (Variant::Subgroup8 { rows: 16 }, true) => &SUBGROUP8_VEC4_R16,
            (Variant::Subgroup8 { .. }, true) => &SUBGROUP8_VEC4_R32,
            (Variant::Subgroup8Narrow, _) => &SUBGROUP8_NARROW,
            (Variant::Subgroup8Shallow, _) => &SUBGROUP8_SHALLOW,
        }
    }

    /// The work-group grid covering an (M, N) result.
    pub fn groups(self, m: u32, n: u32) -> [u32; 3] {
        match self {
            Variant::Naive => [n.div_ceil(16), m.div_ceil(16), 1],
            Variant::Tiled => [n.div_ceil(64), m.div_ceil(64), 1],
            Variant::Subgroup8 { rows } => [n.div_ceil(32), m.div_ceil(rows), 1],
            Variant::Subgroup8Narrow => [m.div_ceil(8), 1, 1],
            Variant::Subgroup8Shallow => [n.div_ceil(8), m.div_ceil(SHALLOW_ROWS), 1],
        }
    }

    /// The variant a product of shape (M, N, K) runs with this device choice.
    ///
    /// The subgroup kernels' work-groups cover 32-wide blocks of N and K, so on a narrow or
    /// shallow product most lanes would compute padding. With them:
    /// - N at most 16 (a classifier's last layer and its weight gradient) goes to
    ///   [`Variant::Subgroup8Narrow`], a lane per row;
    /// - otherwise K at most 16 (the input gradient through that layer) goes to
    ///   [`Variant::Subgroup8Shallow`], a lane per column.
    ///
    /// Both also spare a cold start: each specialisation of the unrolled subgroup kernels takes
    /// 1.4-3.4 s of LLVM compilation on lavapipe's first use, these two a few milliseconds.
    pub fn for_shape(self, _m: u32, n: u32, k: u32) -> Variant {
        match self {
            Variant::Subgroup8 { .. } if n <= NARROW => Variant::Subgroup8Narrow,
            Variant::Subgroup8 { .. } if k <= NARROW => Variant::Subgroup8Shallow,
            v => v,
        }
    }

    /// The subgroup kernel's row count for `m` rows: 16 when `m` is small, so a batch of 1
    /// does not compute 32 clamped rows.
    pub fn for_rows(self, m: u32) -> Variant {
        match self {
            Variant::Subgroup8 { .. } if m <= 16 => Variant::Subgroup8 { rows: 16 },
            v => v,
        }
    }
}

/// Candidates the tuner times on this device.
///
/// On a software adapter with the subgroup kernels, the shared-memory tiled kernel is left
/// out: it is built for hardware GPUs and measured 1.7-2.2 GFLOP/s on llvmpipe against 17-30
/// for the subgroup kernels, so timing it only lengthens a first run (compile plus ~0.4 s).
pub fn candidates(info: &AdapterDesc) -> Vec<Variant> {
    let sg = [
        Variant::Subgroup8 { rows: 16 },
        Variant::Subgroup8 { rows: 32 },
    ];
    let skip_tiled = !info.is_gpu() && sg.iter().any(|v| v.eligible(info));
    std::iter::once(Variant::Tiled)
        .filter(|_| !skip_tiled)
        .chain(sg)
        .filter(|v| v.eligible(info))
        .collect()
}
