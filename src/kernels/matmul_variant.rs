//! The matmul kernels and what each can do: which adapters can run a [`Variant`], its grid,
//! how deep a K its loops allow, and which kernel a given shape should use.
//!
//! | family | template | for | eligible |
//! |---|---|---|---|
//! | naive | `matmul.wgsl` (compiled in) | the baseline, the fallback of last resort | always |
//! | register-blocked `rb8x4`, `rb8x8`, `rb16x8` | `matmul_gen/blocked.rs` | adapters without usable subgroups (OpenGL, software); GPUs as a candidate | 64 invocations |
//! | shared-memory tiled `tiled64x64`, `tiled128x64`, `tiled128x128` (double-buffered) | `matmul_gen/tiled.rs` | hardware GPUs | 256 invocations and the tile's workgroup memory (16, 24 or 16 KiB) |
//! | subgroup-broadcast `sg{S}x16`, `sg{S}x32` (and `sg{S}x64` for S ≤ 16), S ∈ {4, 8, 16, 32, 64, 128} | `matmul_gen/subgroup.rs` | adapters whose subgroup size is exactly S | subgroups, `subgroup_min_size == subgroup_max_size == S` |
//! | narrow (N ≤ 16): `sg{S}narrow`, `rbnarrow`; shallow (K ≤ 16): `sg{S}shallow` | `matmul_gen/subgroup_small.rs`, `matmul_gen/blocked.rs` | a classifier's last layer and its gradients | as their family |
//! | tensor cores `coop16h`, `coop8h` (f16 operands), `coop16f`, `coop8f` (f32 operands), f32 accumulators | `matmul_gen/coop.rs` | GPUs with cooperative matrices; matmuls only (convolutions run `tiled64x64`) | the adapter reports the S×S×S configuration with f32 accumulators (`AdapterDesc::coop_matrices`), subgroups, f16 for `h`; a candidate only with `SUANLI_MATMUL_PRECISION=medium` (a precision change) |
//!
//! Every kernel but the naive one is generated at run time by [`matmul_gen`], the WGSL of one
//! entry point when [`Variant::spec`] or [`Variant::conv_spec`] first asks for it, so a
//! device parses and compiles only what its tuner times or picks.
//!
//! A subgroup kernel's work-group is exactly one subgroup and broadcasts from constant lanes,
//! so it needs a fixed subgroup size: wgpu cannot request one, so an adapter whose size may
//! vary (Intel 8-32, AMD RDNA 32/64, Metal's reported 4-64) runs the other families.
//! [`candidates`] lists what the tuner ([`crate::kernels::matmul_tune`]) times on an adapter.
//!
//! llvmpipe stops any loop after 65,535 iterations per invocation (counting nested loops
//! together), so every kernel advances K by at least 4 per iteration and [`Variant::max_k`]
//! says how deep a K it then reaches there.

use crate::config::MatmulPrecision;
use crate::device::adapter::AdapterDesc;
use crate::device::coop::CoopScalar;
use crate::kernels::matmul_gen::{self, coop, Kernel};
use crate::services::pipeline::{KernelSpec, Shader};
use crate::vocab::Layout;

/// matmul.wgsl (the naive kernels, the shared bindings, store helpers and implicit-im2col
/// loads), after the activation, optimizer-rule and im2col preludes; the generated kernels
/// are assembled after it.
pub const SHADER: Shader = matmul_gen::PRELUDE;

/// The subgroup sizes with kernels of their own.
pub const SUBGROUP_SIZES: [u32; 6] = matmul_gen::SUBGROUP_SIZES;

/// Storage buffers a matmul binds (the kernels declare eight).
pub const STORAGE_BINDINGS: u32 = 8;

const fn spec(shader: Shader, entry: &'static str) -> KernelSpec {
    KernelSpec {
        shader,
        entry,
        bindings: matmul_gen::BINDINGS,
    }
}

/// One output per invocation: the baseline.
pub const NAIVE: KernelSpec = spec(SHADER, "matmul_naive_forward");

/// The subgroup sizes with 64-row kernels (narrow subgroups: CPU adapters; on lavapipe's 8
/// lanes they ran 30% faster than 32 rows, and 128 rows slower again).
pub const TALL_SIZES: [u32; 3] = matmul_gen::TALL_SIZES;

/// The naive convolution twin (A through implicit im2col).
const CONV_NAIVE: KernelSpec = spec(SHADER, "conv2d_naive_forward");

/// The convolution entry points compiled in (`matmul.wgsl`); the others are generated
/// ([`matmul_gen::all_specs`]).
pub const CONV_KERNELS: &[KernelSpec] = &[CONV_NAIVE];

/// The matmul entry points compiled in (`matmul.wgsl`); the others are generated
/// ([`matmul_gen::all_specs`]).
pub const KERNELS: &[KernelSpec] = &[NAIVE];

/// A shared-memory tile shape: (rows, columns) of C per 256-invocation work-group, and K per
/// stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tile {
    /// 64×64, K 16, 4×4 per invocation (16 KiB of workgroup memory, double-buffered).
    T64x64,
    /// 128×64, K 16, 8×4 per invocation (24 KiB).
    T128x64,
    /// 128×128, K 8, 8×8 per invocation (16 KiB).
    T128x128,
}

impl Tile {
    /// Every tile shape.
    pub const ALL: [Tile; 3] = [Tile::T64x64, Tile::T128x64, Tile::T128x128];

    /// (rows, columns, K per stage).
    pub fn dims(self) -> (u32, u32, u32) {
        match self {
            Tile::T64x64 => (64, 64, 16),
            Tile::T128x64 => (128, 64, 16),
            Tile::T128x128 => (128, 128, 8),
        }
    }

    /// Workgroup memory of the two buffers, in bytes.
    pub fn workgroup_bytes(self) -> u32 {
        let (m, n, k) = self.dims();
        2 * (m + n) * k * 4
    }
}

/// A register block: (rows, columns) of C per invocation, 8×8 invocations per work-group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Block {
    /// 8 rows × 4 columns.
    B8x4,
    /// 8 × 8.
    B8x8,
    /// 16 × 8.
    B16x8,
}

impl Block {
    /// Every block shape.
    pub const ALL: [Block; 3] = [Block::B8x4, Block::B8x8, Block::B16x8];

    /// (rows, columns) per invocation.
    pub fn dims(self) -> (u32, u32) {
        match self {
            Block::B8x4 => (8, 4),
            Block::B8x8 => (8, 8),
            Block::B16x8 => (16, 8),
        }
    }
}

/// A matmul kernel configuration (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// [`NAIVE`].
    Naive,
    /// Shared-memory tiled, double-buffered.
    Tiled(Tile),
    /// Register-blocked, no shared memory.
    Blocked(Block),
    /// At most 16 columns, without subgroups (an invocation per row); [`Variant::for_shape`]
    /// picks it.
    BlockedNarrow,
    /// Subgroup-broadcast kernels for subgroups of exactly `size` lanes, `rows` rows of C per
    /// work-group (16 or 32).
    Subgroup {
        /// Lanes per subgroup.
        size: u32,
        /// Rows of C per work-group.
        rows: u32,
    },
    /// At most 16 columns: a lane per row of C; [`Variant::for_shape`] picks it.
    SubgroupNarrow {
        /// Lanes per subgroup.
        size: u32,
    },
    /// K at most 16: a lane per column of C; [`Variant::for_shape`] picks it.
    SubgroupShallow {
        /// Lanes per subgroup.
        size: u32,
    },
    /// Tensor cores: `s`×`s`×`s` cooperative matrices, f16 operands (`half`) or f32, f32
    /// accumulators ([`matmul_gen::coop`]). A candidate only where
    /// [`MatmulPrecision::allows_f16`] ([`Variant::allowed_under`]): with f16 operands the
    /// products round their operands to f16, and the f32-operand kernels (Metal's simdgroup
    /// matrices) have not yet run on any GPU, so no user meets them without opting in.
    Coop {
        /// Fragment size (8 or 16).
        s: u32,
        /// f16 operands.
        half: bool,
    },
}

/// The tensor-core variants, in the tuner's order.
pub const COOP: [Variant; 4] = [
    Variant::Coop { s: 16, half: true },
    Variant::Coop { s: 8, half: true },
    Variant::Coop { s: 16, half: false },
    Variant::Coop { s: 8, half: false },
];

/// The most columns the narrow kernels handle, and the deepest K the shallow ones do.
pub const NARROW: u32 = 16;
/// On a hardware GPU, the fewest rows a narrow product needs to run on the narrow kernels (a
/// lane per row): below it, the wide kernels' cooperating work-groups are faster.
pub const GPU_NARROW_MIN_ROWS: u32 = 16_384;
/// Rows of C per work-group of the shallow kernels (`SHALLOW_ROWS` in the WGSL).
const SHALLOW_ROWS: u32 = 32;
/// llvmpipe's loop limiter: iterations of loop bodies per invocation.
pub const LLVMPIPE_LOOP_LIMIT: u64 = 65_535;

/// Work-groups per grid row of the narrow kernels once their rows need more than one grid
/// dimension; the templates ([`matmul_gen`]) write the same number into the kernels.
pub const NARROW_FOLD: u32 = matmul_gen::common::NARROW_FOLD;

/// A one-dimensional count of work-groups as a grid the narrow kernels decode.
fn fold(groups: u32) -> [u32; 3] {
    if groups <= u16::MAX as u32 {
        [groups, 1, 1]
    } else {
        [NARROW_FOLD, groups.div_ceil(NARROW_FOLD), 1]
    }
}

/// Whether the aligned vec4 twin of a kernel applies to a product of this layout and shape
/// (the rows it loads are whole 16-byte words).
pub fn vec4_ok(layout: Layout, m: u32, n: u32, k: u32) -> bool {
    match layout {
        Layout::NN | Layout::NT => k.is_multiple_of(4) && n.is_multiple_of(4),
        Layout::TN => m.is_multiple_of(4) && n.is_multiple_of(4),
    }
}

fn size_index(size: u32) -> Option<usize> {
    SUBGROUP_SIZES.iter().position(|&s| s == size)
}

impl Variant {
    /// Every name [`Variant::parse`] accepts, for messages.
    pub fn names() -> Vec<String> {
        let mut v: Vec<String> = ["naive", "tiled"].iter().map(|s| s.to_string()).collect();
        v.extend(COOP.iter().map(|c| c.name()));
        v.extend(Tile::ALL.iter().map(|t| Variant::Tiled(*t).name()));
        v.extend(Block::ALL.iter().map(|b| Variant::Blocked(*b).name()));
        for s in SUBGROUP_SIZES {
            v.push(format!("sg{s}x16"));
            v.push(format!("sg{s}x32"));
            if TALL_SIZES.contains(&s) {
                v.push(format!("sg{s}x64"));
            }
        }
        v
    }

    /// Parses the names used by `SUANLI_MATMUL` and the tuning cache (`tiled` is
    /// `tiled64x64`).
    pub fn parse(s: &str) -> Option<Variant> {
        let s = s.trim();
        if s == "naive" {
            return Some(Variant::Naive);
        }
        if s == "tiled" {
            return Some(Variant::Tiled(Tile::T64x64));
        }
        let all = Tile::ALL
            .iter()
            .map(|t| Variant::Tiled(*t))
            .chain(COOP)
            .chain(Block::ALL.iter().map(|b| Variant::Blocked(*b)))
            .chain(
                SUBGROUP_SIZES
                    .iter()
                    .flat_map(|&size| [16, 32, 64].map(|rows| Variant::Subgroup { size, rows }))
                    .filter(|v| !matches!(v, Variant::Subgroup { size, rows: 64 } if !TALL_SIZES.contains(size))),
            );
        all.into_iter().find(|v| v.name() == s)
    }

    /// The name [`Variant::parse`] reads.
    pub fn name(self) -> String {
        match self {
            Variant::Naive => "naive".into(),
            Variant::Tiled(t) => {
                let (m, n, _) = t.dims();
                format!("tiled{m}x{n}")
            }
            Variant::Blocked(b) => {
                let (m, n) = b.dims();
                format!("rb{m}x{n}")
            }
            Variant::BlockedNarrow => "rbnarrow".into(),
            Variant::Subgroup { size, rows } => format!("sg{size}x{rows}"),
            Variant::SubgroupNarrow { size } => format!("sg{size}narrow"),
            Variant::SubgroupShallow { size } => format!("sg{size}shallow"),
            Variant::Coop { s, half } => format!("coop{s}{}", if half { "h" } else { "f" }),
        }
    }

    /// Whether this variant rounds products' operands to f16 (whatever
    /// [`crate::kernels::matmul::MatmulArgs::half`] says: it converts them for its tensor cores).
    pub fn is_reduced_precision(self) -> bool {
        matches!(self, Variant::Coop { half: true, .. })
    }

    /// Whether the precision setting lets the tuner (or `SUANLI_MATMUL`) use this variant:
    /// the tensor-core kernels only under [`MatmulPrecision::Medium`], those with f32
    /// operands too until a GPU run has checked them against the f64 reference (none has:
    /// no task has drawn a GPU since they were written). One source of truth for the
    /// candidates, the tuner's cache and the benchmark. Float16-operand products
    /// ([`crate::kernels::matmul::MatmulArgs::half`], the mixed_float16 policy) included:
    /// such a product runs the tuner's f32 choice with its operand loads rounded, so the
    /// f16 tensor-core kernels need the opt-in for it too (the next step: the policy
    /// choosing the f16 tensor-core kernels, once a GPU run has checked them).
    pub fn allowed_under(self, precision: MatmulPrecision) -> bool {
        !matches!(self, Variant::Coop { .. }) || precision.allows_f16()
    }

    /// The variant a convolution's implicit GEMM runs for this one: the tensor-core kernels
    /// have no im2col twin, so their convolutions run the 64×64 shared-memory tile.
    pub fn conv_fallback(self) -> Variant {
        match self {
            Variant::Coop { .. } => Variant::Tiled(Tile::T64x64),
            v => v,
        }
    }

    /// Whether an adapter can run this variant (pure: tested with made-up adapters).
    pub fn eligible(self, info: &AdapterDesc) -> bool {
        let l = &info.limits;
        match self {
            Variant::Naive => l.max_invocations >= 256,
            Variant::Blocked(_) | Variant::BlockedNarrow => l.max_invocations >= 64,
            Variant::Tiled(t) => {
                l.max_invocations >= 256 && l.max_workgroup_storage >= t.workgroup_bytes()
            }
            Variant::Subgroup { size, rows } => {
                (matches!(rows, 16 | 32) || (rows == 64 && TALL_SIZES.contains(&size)))
                    && Variant::SubgroupNarrow { size }.eligible(info)
            }
            Variant::SubgroupNarrow { size } | Variant::SubgroupShallow { size } => {
                info.features.subgroups
                    && size_index(size).is_some()
                    && l.subgroup_size == (size, size)
                    && l.max_invocations >= size
            }
            Variant::Coop { s, half } => {
                let f = &info.features;
                let ab = if half {
                    CoopScalar::F16
                } else {
                    CoopScalar::F32
                };
                let k = coop::Coop { s, half, j: 1 };
                matches!(s, 8 | 16)
                    && f.cooperative_matrix
                    && f.subgroups
                    && (f.shader_f16 || !half)
                    && info.coop_matrices.iter().any(|c| {
                        (c.m, c.n, c.k) == (s, s, s) && c.ab == ab && c.cr == CoopScalar::F32
                    })
                    && l.max_invocations >= coop::invocations(s)
                    && l.max_workgroup_storage >= k.workgroup_bytes()
            }
        }
    }

    /// The generated kernel this variant runs (`None`: the naive one, compiled in). Sizes
    /// without kernels fall back to 8 lanes and rows to what the size has, as the tables this
    /// replaced did; such variants are never eligible.
    fn kernel(self, vec4: bool) -> Option<Kernel> {
        let size_of = |size: u32| if size_index(size).is_some() { size } else { 8 };
        Some(match self {
            Variant::Naive => return None,
            Variant::BlockedNarrow => Kernel::BlockedNarrow,
            Variant::Tiled(t) => {
                let (bm, bn, bk) = t.dims();
                Kernel::Tiled {
                    bm,
                    bn,
                    bk,
                    v4: vec4,
                }
            }
            Variant::Blocked(b) => {
                let (tm, tn) = b.dims();
                Kernel::Blocked { tm, tn, v4: vec4 }
            }
            Variant::Subgroup { size, rows } => {
                let size = size_of(size);
                let rows = match rows {
                    16 | 32 => rows,
                    _ if TALL_SIZES.contains(&size) => 64,
                    _ => 32,
                };
                Kernel::Subgroup {
                    size,
                    rows,
                    v4: vec4,
                }
            }
            Variant::SubgroupNarrow { size } => Kernel::SubgroupNarrow {
                size: size_of(size),
            },
            Variant::SubgroupShallow { size } => Kernel::SubgroupShallow {
                size: size_of(size),
            },
            // The widest subgroups assumed: [`Variant::spec_on`] fits J to the adapter.
            Variant::Coop { s, half } => Kernel::Coop(coop::Coop {
                s,
                half,
                j: coop::j_for(s, 0),
            }),
        })
    }

    /// [`Variant::spec`] on the adapter `info`: a tensor-core kernel with as many warp tiles
    /// per subgroup as the adapter's widest subgroups need ([`coop::j_for`]).
    pub fn spec_on(self, vec4: bool, info: &AdapterDesc) -> &'static KernelSpec {
        match self {
            Variant::Coop { s, half } => Kernel::Coop(coop::Coop {
                s,
                half,
                j: coop::j_for(s, info.limits.subgroup_size.1),
            })
            .spec(false),
            v => v.spec(vec4),
        }
    }

    /// The entry point this variant runs (`vec4`: the 16-byte-load twin, see [`vec4_ok`];
    /// the naive and narrow kernels have none), generated on first use.
    pub fn spec(self, vec4: bool) -> &'static KernelSpec {
        match self.kernel(vec4) {
            None => &NAIVE,
            Some(k) => k.spec(false),
        }
    }

    /// The convolution twin of [`Variant::spec`]: the same kernel with A read through
    /// implicit im2col and K split by work-group z (`shaders/im2col.wgsl`).
    pub fn conv_spec(self, vec4: bool) -> &'static KernelSpec {
        let v = self.conv_fallback();
        match v.kernel(vec4 && v.has_vec4()) {
            None => &CONV_NAIVE,
            Some(k) => k.spec(true),
        }
    }

    /// Whether this variant has a vec4 twin.
    pub fn has_vec4(self) -> bool {
        matches!(
            self,
            Variant::Tiled(_) | Variant::Blocked(_) | Variant::Subgroup { .. }
        )
    }

    /// The work-group grid covering an (M, N) result. The narrow kernels spread their rows
    /// over x alone, and a grid dimension holds at most 65,535 work-groups (WebGPU's
    /// guaranteed limit): 262,140 rows at 4 lanes, a 16-filter convolution of 26×26 images
    /// at batch 388. Past that, x holds [`NARROW_FOLD`] work-groups and y counts the blocks.
    pub fn groups(self, m: u32, n: u32) -> [u32; 3] {
        match self {
            Variant::Naive => [n.div_ceil(16), m.div_ceil(16), 1],
            Variant::Tiled(t) => {
                let (bm, bn, _) = t.dims();
                [n.div_ceil(bn), m.div_ceil(bm), 1]
            }
            Variant::Blocked(b) => {
                let (tm, tn) = b.dims();
                [n.div_ceil(8 * tn), m.div_ceil(8 * tm), 1]
            }
            Variant::BlockedNarrow => fold(m.div_ceil(64)),
            Variant::Subgroup { size, rows } => [n.div_ceil(4 * size), m.div_ceil(rows), 1],
            Variant::SubgroupNarrow { size } => fold(m.div_ceil(size)),
            Variant::SubgroupShallow { size } => [n.div_ceil(size), m.div_ceil(SHALLOW_ROWS), 1],
            Variant::Coop { s, .. } => {
                let (bm, bn, ..) = coop::tile(s);
                [n.div_ceil(bn), m.div_ceil(bm), 1]
            }
        }
    }

    /// The deepest K this variant computes correctly on an adapter that stops loops after
    /// `LLVMPIPE_LOOP_LIMIT` iterations: each loop iteration advances K by this much.
    pub fn k_per_iteration(self) -> u64 {
        match self {
            Variant::Naive | Variant::Blocked(_) | Variant::BlockedNarrow => 4,
            Variant::SubgroupNarrow { .. } => 4,
            Variant::SubgroupShallow { .. } => u64::MAX,
            Variant::Tiled(t) => t.dims().2 as u64,
            Variant::Subgroup { size, .. } => 4 * size.min(16) as u64,
            Variant::Coop { s, .. } => coop::tile(s).2 as u64,
        }
    }

    /// The deepest K this variant handles on `info` (`None`: no limit).
    pub fn max_k(self, info: &AdapterDesc) -> Option<u64> {
        info.limits
            .max_loop_iterations
            .map(|l| l as u64 * self.k_per_iteration().min(1 << 40))
    }

    /// The variant a product of shape (M, N, K) runs with this device choice.
    ///
    /// Work-groups of the wide kernels cover 32 or more columns, so on a narrow or shallow
    /// product most lanes would compute padding. So:
    /// - N at most 16 (a classifier's last layer and its weight gradient) goes to a narrow
    ///   kernel: a lane per row ([`Variant::SubgroupNarrow`] with a subgroup choice,
    ///   [`Variant::BlockedNarrow`] otherwise);
    /// - otherwise K at most 16 (the input gradient through that layer) goes, with a subgroup
    ///   choice, to [`Variant::SubgroupShallow`], a lane per column;
    /// - a 128-row tile on a product of at most 64 rows is the 64×64 tile.
    ///
    /// The narrow and shallow kernels also spare a cold start: each specialisation of the
    /// unrolled kernels takes seconds of LLVM compilation on lavapipe's first use, these a
    /// few milliseconds.
    pub fn for_shape(self, m: u32, n: u32, k: u32) -> Variant {
        match self {
            Variant::Subgroup { size, .. } if n <= NARROW => Variant::SubgroupNarrow { size },
            Variant::Subgroup { size, .. } if k <= NARROW => Variant::SubgroupShallow { size },
            Variant::Tiled(_) | Variant::Blocked(_) | Variant::Naive | Variant::Coop { .. }
                if n <= NARROW =>
            {
                Variant::BlockedNarrow
            }
            Variant::Tiled(Tile::T128x64 | Tile::T128x128) if m <= 64 => {
                Variant::Tiled(Tile::T64x64)
            }
            v => v,
        }
    }

    /// [`Variant::for_shape`] on the adapter `info`: on a hardware GPU, a narrow product of
    /// fewer than [`GPU_NARROW_MIN_ROWS`] rows stays on the device's wide kernel. The narrow
    /// kernels give each row of C one lane that walks K alone, which suits a CPU adapter (few,
    /// wide lanes) and a GPU only when there are rows enough to fill it: on an H200 the
    /// convnet's Dense 1600→10 at batch 128 ran on 128 lanes for 427 µs, 64% of the step.
    pub fn for_shape_on(self, m: u32, n: u32, k: u32, info: &AdapterDesc) -> Variant {
        let v = self.for_shape(m, n, k);
        let narrow = matches!(v, Variant::BlockedNarrow | Variant::SubgroupNarrow { .. });
        if !(narrow && info.is_gpu() && m < GPU_NARROW_MIN_ROWS) {
            return v;
        }
        match self {
            Variant::Tiled(Tile::T128x64 | Tile::T128x128) if m <= 64 => {
                Variant::Tiled(Tile::T64x64)
            }
            v => v,
        }
    }

    /// The subgroup kernel's row count for `m` rows: no taller than `m` needs, so a batch of
    /// 1 does not compute 32 clamped rows.
    pub fn for_rows(self, m: u32) -> Variant {
        match self {
            Variant::Subgroup { size, .. } if m <= 16 => Variant::Subgroup { size, rows: 16 },
            Variant::Subgroup { size, rows: 64 } if m <= 32 => Variant::Subgroup { size, rows: 32 },
            v => v,
        }
    }
}

/// Candidates the tuner times on an adapter (pure: tested with made-up adapters; the table in
/// docs/PERFORMANCE.md lists them):
///
/// - the subgroup kernels of the adapter's subgroup size, when it reports exactly one;
/// - on a hardware GPU, the three shared-memory tiles (as its workgroup memory allows) and
///   the 8×8 register block;
/// - on a software adapter without fixed-size subgroups, the three register blocks (the
///   shared-memory tiles are left out: llvmpipe's workgroup memory is as slow as any other
///   per-lane load, and they measured 1.7-2.2 GFLOP/s there against 6-20 for the others).
///
/// These are the SIMT kernels, which the convolutions' tuner times too;
/// [`candidates_with`] adds the tensor-core ones (matmuls only).
pub fn candidates(info: &AdapterDesc) -> Vec<Variant> {
    simt_candidates(info)
}

/// [`candidates`] under a matmul precision setting: the tensor-core kernels the adapter
/// reports configurations for ([`Variant::Coop`]) come first, and only under
/// [`MatmulPrecision::Medium`] ([`Variant::allowed_under`]: f16 operands are a precision
/// change the user opts into).
pub fn candidates_with(info: &AdapterDesc, precision: MatmulPrecision) -> Vec<Variant> {
    let mut out: Vec<Variant> = COOP
        .iter()
        .copied()
        .filter(|v| v.eligible(info) && v.allowed_under(precision))
        .collect();
    out.extend(candidates(info));
    out
}

fn simt_candidates(info: &AdapterDesc) -> Vec<Variant> {
    let sg: Vec<Variant> = SUBGROUP_SIZES
        .iter()
        .flat_map(|&size| [16, 32, 64].map(|rows| Variant::Subgroup { size, rows }))
        .filter(|v| v.eligible(info))
        .collect();
    let mut out = sg.clone();
    if info.is_gpu() {
        out.extend(Tile::ALL.iter().map(|t| Variant::Tiled(*t)));
        out.push(Variant::Blocked(Block::B8x8));
    } else if sg.is_empty() {
        out.extend(Block::ALL.iter().map(|b| Variant::Blocked(*b)));
    }
    out.retain(|v| v.eligible(info));
    if out.is_empty() {
        out.push(Variant::Naive);
    }
    out
}
