//! The matmul kernels generated at run time: one template per family, the WGSL of one entry
//! point produced the first time a device needs it.
//!
//! | file | family |
//! |---|---|
//! | [`subgroup`] | subgroup-broadcast, wide (`sg{S}_r{R}`, `sg{S}v4_r{R}`) |
//! | [`subgroup_small`] | subgroup-broadcast, narrow (N ≤ 16) and shallow (K ≤ 16) |
//! | [`blocked`] | register-blocked (`rb{TM}x{TN}`, `rb…v4`) and narrow without subgroups |
//! | [`tiled`] | shared-memory tiled, double-buffered (`t{BM}x{BN}`, `t…v4`) |
//! | [`coop`] | tensor cores: cooperative matrices, f16 or f32 operands, f32 accumulators (`coop{S}{h,f}_j{J}`; matmul only) |
//! | [`batched`] | the batched-and-strided rewrite of a matmul (not conv) entry point |
//! | [`half`] | the float16-operand rewrite: every operand load through `h16`/`h16v` (the `HALF` override) |
//! | [`common`] | helper names, grid folding, line joining |
//!
//! Why at run time: the unrolled kernels of every family and subgroup size came to 60,000
//! lines of WGSL, and a device used a handful of them. Baked in, every binary carried 1.5 MB
//! of text and every device parsed a 0.5-1.6 MB module for its first matmul; generated, a
//! device parses only the entry points the tuner times or picks, each in a module of its own
//! (the `matmul.wgsl` preludes plus that kernel).

pub mod batched;
pub mod blocked;
pub mod common;
pub mod coop;
pub mod half;
pub mod subgroup;
pub mod subgroup_small;
pub mod tiled;

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use crate::services::pipeline::{Access, KernelSpec, Shader};

/// matmul.wgsl (the naive kernels, the shared bindings, store helpers and implicit-im2col
/// loads), after the activation, optimizer-rule and im2col preludes: every generated kernel
/// is assembled after it.
pub const PRELUDE: Shader = crate::services::pipeline::shader!(
    "matmul" after "activation", "optim_rule", "im2col", "f16_round", "half_operands"
);

/// The bindings every matmul entry point declares.
pub const BINDINGS: &[Access] = &[
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

/// The subgroup sizes with kernels of their own.
pub const SUBGROUP_SIZES: [u32; 6] = [4, 8, 16, 32, 64, 128];

/// The subgroup sizes with 64-row kernels: taller tiles where subgroups are narrow (CPU
/// adapters). On lavapipe's 8 lanes 64 rows ran 30% faster than 32 (more multiply-adds per
/// load; the spills cost less than the loads), 128 slower again. Wide subgroups (GPUs) keep
/// 16 and 32: 256 accumulators a lane would cost them occupancy.
pub const TALL_SIZES: [u32; 3] = [4, 8, 16];

/// The row counts of the wide subgroup kernels for size `s`.
pub fn rows_of(s: u32) -> Vec<u32> {
    let mut r = vec![16, 32];
    if TALL_SIZES.contains(&s) {
        r.push(64);
    }
    r
}

/// The register blocks (rows, columns per invocation) with kernels.
pub const BLOCKS: [(u32, u32); 3] = [(8, 4), (8, 8), (16, 8)];
/// The shared-memory tiles (rows, columns, K per stage) with kernels.
pub const TILES: [(u32, u32, u32); 3] = [(64, 64, 16), (128, 64, 16), (128, 128, 8)];

/// One generated entry point (its convolution twin is the same key with `conv`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// At most 16 columns without subgroups: an invocation per row.
    BlockedNarrow,
    /// Register-blocked, `tm`×`tn` per invocation; `v4`: 16-byte loads.
    Blocked {
        /// Rows per invocation.
        tm: u32,
        /// Columns per invocation.
        tn: u32,
        /// 16-byte loads.
        v4: bool,
    },
    /// Shared-memory tiled, `bm`×`bn` per work-group, `bk` of K per stage.
    Tiled {
        /// Rows per work-group.
        bm: u32,
        /// Columns per work-group.
        bn: u32,
        /// K per stage.
        bk: u32,
        /// 16-byte loads.
        v4: bool,
    },
    /// Subgroup-broadcast for subgroups of exactly `size` lanes, `rows` rows per work-group.
    Subgroup {
        /// Lanes per subgroup.
        size: u32,
        /// Rows of C per work-group.
        rows: u32,
        /// 16-byte loads.
        v4: bool,
    },
    /// At most 16 columns: a lane per row.
    SubgroupNarrow {
        /// Lanes per subgroup.
        size: u32,
    },
    /// K at most 16: a lane per column.
    SubgroupShallow {
        /// Lanes per subgroup.
        size: u32,
    },
    /// Cooperative matrices (tensor cores); no convolution twin (`conv` is ignored).
    Coop(coop::Coop),
}

impl Kernel {
    /// Every generated kernel, in the order of the files the Python generators wrote.
    pub fn all() -> Vec<Kernel> {
        let mut v = vec![Kernel::BlockedNarrow];
        for (tm, tn) in BLOCKS {
            v.extend([false, true].map(|v4| Kernel::Blocked { tm, tn, v4 }));
        }
        for (bm, bn, bk) in TILES {
            v.extend([false, true].map(|v4| Kernel::Tiled { bm, bn, bk, v4 }));
        }
        for size in SUBGROUP_SIZES {
            v.extend(Kernel::subgroup_family(size));
        }
        v
    }

    /// The kernels of one subgroup size: narrow, shallow, scalar by rows, vec4 by rows.
    pub fn subgroup_family(size: u32) -> Vec<Kernel> {
        let mut v = vec![
            Kernel::SubgroupNarrow { size },
            Kernel::SubgroupShallow { size },
        ];
        for v4 in [false, true] {
            v.extend(
                rows_of(size)
                    .into_iter()
                    .map(|rows| Kernel::Subgroup { size, rows, v4 }),
            );
        }
        v
    }

    /// The entry point's WGSL (without the preludes or workgroup buffers). Matmul kernels
    /// come batched ([`batched::batched`]); convolution twins read A through implicit
    /// im2col and use z for K chunks instead.
    /// Every operand load is wrapped for float16 operands ([`half::wrap_loads`]: rounded
    /// under the `HALF` override, unchanged without it).
    pub fn text(self, conv: bool) -> String {
        half::wrap_loads(&self.text_unrounded(conv))
    }

    /// [`Kernel::text`] before [`half::wrap_loads`] wraps its operand loads.
    fn text_unrounded(self, conv: bool) -> String {
        let raw = match self {
            Kernel::BlockedNarrow => blocked::narrow(conv),
            Kernel::Blocked { tm, tn, v4 } => blocked::blocked(tm, tn, v4, conv),
            Kernel::Tiled { bm, bn, bk, v4 } => tiled::tiled(bm, bn, bk, v4, conv),
            Kernel::Subgroup { size, rows, v4 } if v4 => subgroup::vec4_kernel(size, rows, conv),
            Kernel::Subgroup { size, rows, .. } => subgroup::scalar_kernel(size, rows, conv),
            Kernel::SubgroupNarrow { size } => subgroup_small::narrow_kernel(size, conv),
            Kernel::SubgroupShallow { size } => subgroup_small::shallow_kernel(size, conv),
            Kernel::Coop(c) => return batched::batched(&c.text(), "wid.z"),
        };
        if conv {
            return raw;
        }
        let z = if self == Kernel::BlockedNarrow {
            "gid.z"
        } else {
            "wid.z"
        };
        batched::batched(&raw, z)
    }

    /// The entry point's name.
    pub fn entry(self, conv: bool) -> String {
        let fam = if conv { "conv2d" } else { "matmul" };
        let v = |v4: bool| if v4 { "v4" } else { "" };
        match self {
            Kernel::BlockedNarrow => format!("{fam}_rb_narrow_forward"),
            Kernel::Blocked { tm, tn, v4 } => format!("{fam}_rb{tm}x{tn}{}_forward", v(v4)),
            Kernel::Tiled { bm, bn, v4, .. } => format!("{fam}_t{bm}x{bn}{}_forward", v(v4)),
            Kernel::Subgroup { size, rows, v4 } => {
                format!("{fam}_sg{size}{}_r{rows}_forward", v(v4))
            }
            Kernel::SubgroupNarrow { size } => format!("{fam}_sg{size}_narrow_forward"),
            Kernel::SubgroupShallow { size } => format!("{fam}_sg{size}_shallow_forward"),
            Kernel::Coop(c) => c.entry(),
        }
    }

    /// The whole WGSL module of this entry point: the preludes and `matmul.wgsl`, the
    /// workgroup buffers a tiled kernel uses, and the kernel.
    pub fn module(self, conv: bool) -> String {
        let (enables, storage) = match self {
            Kernel::Tiled { bm, bn, bk, .. } => ("", tiled::tiled_storage(bm, bn, bk)),
            // WGSL's enable directives must open the module.
            Kernel::Coop(c) => (c.enables(), c.storage()),
            _ => ("", String::new()),
        };
        format!("{enables}{}\n{storage}{}", PRELUDE.source, self.text(conv))
    }

    /// The kernel's declaration, its module generated on first use and kept for the process.
    ///
    /// Why leaked: [`KernelSpec`] and [`Shader`] hold `&'static str` (every other kernel's
    /// WGSL is compiled in), and a generated one lives as long as the process may dispatch
    /// it. The leak is bounded: at most one module per entry point ([`Kernel::all`], twice
    /// with the convolution twins), and only those a process asks for.
    pub fn spec(self, conv: bool) -> &'static KernelSpec {
        type Cache = Mutex<HashMap<(Kernel, bool), &'static KernelSpec>>;
        static CACHE: OnceLock<Cache> = OnceLock::new();
        let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
        let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
        map.entry((self, conv)).or_insert_with(|| {
            let source: &'static str = Box::leak(self.module(conv).into_boxed_str());
            let entry: &'static str = Box::leak(self.entry(conv).into_boxed_str());
            Box::leak(Box::new(KernelSpec {
                shader: Shader {
                    name: "matmul_gen",
                    source,
                },
                entry,
                bindings: BINDINGS,
            }))
        })
    }
}

/// Every generated kernel's declaration, matmul and convolution twins (generates them all:
/// for tests and tools, never on a device's path).
pub fn all_specs() -> Vec<&'static KernelSpec> {
    Kernel::all()
        .into_iter()
        .flat_map(|k| [k.spec(false), k.spec(true)])
        .collect()
}

/// Every tensor-core kernel an adapter may be given: fragments of 8 and 16, f16 and f32
/// operands, each for 1, 2 or 4 warp tiles per subgroup (for tests and tools: naga
/// validates them where no adapter runs them).
pub fn coop_kernels() -> Vec<Kernel> {
    let mut v = Vec::new();
    for s in [8, 16] {
        for half in [true, false] {
            let mut js: Vec<u32> = [4, 8, 16, 32, 64, 128, 0]
                .iter()
                .map(|&lanes| coop::j_for(s, lanes))
                .collect();
            js.sort();
            js.dedup();
            v.extend(
                js.into_iter()
                    .map(|j| Kernel::Coop(coop::Coop { s, half, j })),
            );
        }
    }
    v
}

/// Every tensor-core kernel's declaration ([`coop_kernels`]).
pub fn coop_specs() -> Vec<&'static KernelSpec> {
    coop_kernels().into_iter().map(|k| k.spec(false)).collect()
}

/// Hashes what the generated kernels are made of, for the tuning caches' versions: the
/// prelude and the templates' own source (editing a template measures again; generating
/// every kernel to hash its text would cost a cold start what the generation saves).
pub fn hash_version(h: &mut impl std::hash::Hasher) {
    use std::hash::Hash;
    PRELUDE.source.hash(h);
    for t in [
        include_str!("mod.rs"),
        include_str!("batched.rs"),
        include_str!("blocked.rs"),
        include_str!("common.rs"),
        include_str!("coop.rs"),
        include_str!("half.rs"),
        include_str!("subgroup.rs"),
        include_str!("subgroup_small.rs"),
        include_str!("tiled.rs"),
    ] {
        t.hash(h);
    }
}

#[cfg(test)]
mod tests;
