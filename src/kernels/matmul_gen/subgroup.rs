//! Templates of the subgroup-broadcast kernels for subgroups of exactly S lanes: the wide
//! ones (R rows of C per work-group, scalar loads or 16-byte `v4` loads).
//!
//! The design (docs/PERFORMANCE.md says why it suits lavapipe): a work-group is one subgroup of
//! S lanes covering 4S columns of C (4 per lane) and R rows. For each block of K, every lane
//! loads one 4-wide K slice of A per row and shares it with `subgroupBroadcast` (a register
//! broadcast), so each A element is loaded once per work-group, not once per lane; each lane
//! then loads its own 4 columns of B for each k, reused across all R rows. Rows beyond M and
//! columns beyond N are clamped (computed, never stored); K beyond its end contributes zero
//! through the A operand. Subgroup operations run in uniform control flow: no lane returns
//! early.
//!
//! Why unrolled by a template: `subgroupBroadcast` takes a constant lane, and on llvmpipe the
//! per-lane accumulators must stay in named registers (an array indexed in a loop is only
//! unrolled by Mesa's NIR up to a size limit; past it llvmpipe lowers it to per-lane scalar
//! loops and the kernel runs 2-3x slower). Writing every broadcast and every row out avoids
//! both. WGSL (naga 30) cannot fix a pipeline's subgroup size, so each size S gets its own
//! kernels with work-groups of exactly S invocations.

use super::common::{csum, csum4, lines, stc, stc4, COMP};

/// Lanes that load distinct A slices per K block: all of them up to 16 (the block is then
/// 4S deep), 16 beyond (a 64-deep block keeps the unrolled code from growing with S).
pub fn loaders(s: u32) -> u32 {
    s.min(16)
}

/// An entry point's name: `matmul_sg8_r16_forward`, or `conv2d_sg8_r16_forward` for the
/// convolution twin (A through implicit im2col, K split by work-group z).
pub(super) fn entry(kind: &str, s: u32, conv: bool) -> String {
    let fam = if conv { "conv2d" } else { "matmul" };
    format!("{fam}_sg{s}{kind}_forward")
}

fn fma_rows(rows: u32, j: u32) -> String {
    lines(rows, |r| {
        format!(
            "            {{ let s = subgroupBroadcast(x{r}, {j}u); \
             c{r} = fma(vec4<f32>(s.w), b3, fma(vec4<f32>(s.z), b2, fma(vec4<f32>(s.y), b1, fma(vec4<f32>(s.x), b0, c{r})))); }}"
        )
    })
}

fn stores(rows: u32, conv: bool) -> String {
    let st = stc(conv);
    lines(rows, |r| {
        format!(
            "    {st}row0 + {r}u, col0, c{r}.x); {st}row0 + {r}u, col0 + 1u, c{r}.y); \
             {st}row0 + {r}u, col0 + 2u, c{r}.z); {st}row0 + {r}u, col0 + 3u, c{r}.w);"
        )
    })
}

fn stores4(rows: u32, conv: bool) -> String {
    let st = stc4(conv);
    lines(rows, |r| format!("    {st}row0 + {r}u, col0, c{r});"))
}

fn decls(rows: u32) -> String {
    lines(rows, |r| format!("    var c{r} = vec4<f32>(0.0);")) + "\n    var bsum = vec4<f32>(0.0);"
}

fn lane_expr(s: u32) -> String {
    let kl = loaders(s);
    if kl == s {
        "lane".into()
    } else {
        format!("(lane % {kl}u)")
    }
}

fn colsum_block(j: u32, kend: &str) -> String {
    let k = 4 * j;
    format!(
        "            if (EPI == 2u) {{
                // Column sums of op(B) (rows past K masked: their loads are clamped copies).
                let mk = vec4<f32>(vec4<u32>(kb + {k}u) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>({kend}));
                bsum += mk.x * b0 + mk.y * b1 + mk.z * b2 + mk.w * b3;
            }}"
    )
}

/// The kernel's K range for a convolution twin (a chunk per work-group z), and its loop head.
fn k_range(conv: bool, var: &str) -> (&'static str, String) {
    if conv {
        (
            "    let kbeg = k_begin(wid.z);\n    let kend = k_end(wid.z, p.k);\n",
            format!("var {var} = kbeg; {var} < kend;"),
        )
    } else {
        ("", format!("var {var} = 0u; {var} < p.k;"))
    }
}

/// The wide kernel with scalar loads (any layout, every shape), `rows` rows per work-group.
pub fn scalar_kernel(s: u32, rows: u32, conv: bool) -> String {
    let kl = loaders(s);
    let kend = if conv { "kend" } else { "p.k" };
    let (loads, rbs, kprep, live);
    if conv {
        // A through implicit im2col: each row's side once, each lane's 4 k once per block.
        loads = lines(rows, |r| {
            format!("        let x{r} = conv_a4(ri{r}, kx, kv < vec4<u32>(kend));")
        });
        rbs = lines(rows, |r| {
            format!("    let ri{r} = ix_row(min(row0 + {r}u, mlast));")
        });
        kprep = "        let kx = ix_k4(min(kv, vec4<u32>(klast)));";
        live = "";
    } else {
        loads = lines(rows, |r| {
            format!("        let x{r} = live * vec4<f32>(a[rb{r} + kc.x], a[rb{r} + kc.y], a[rb{r} + kc.z], a[rb{r} + kc.w]);")
        });
        rbs = lines(rows, |r| {
            format!("    let rb{r} = min(row0 + {r}u, mlast) * ams;")
        });
        kprep = "        let kc = min(kv, vec4<u32>(klast)) * aks;";
        live = "        let live = vec4<f32>(kv < vec4<u32>(p.k));\n";
    }
    let blocks = lines(kl, |j| {
        let k = 4 * j;
        format!(
            "        {{
            let kk = min(kb + {k}u, klast);
            let b0 = sg_load_b4(kk, bcol, bks);
            let b1 = sg_load_b4(min(kk + 1u, klast), bcol, bks);
            let b2 = sg_load_b4(min(kk + 2u, klast), bcol, bks);
            let b3 = sg_load_b4(min(kk + 3u, klast), bcol, bks);
{}
{}
        }}",
            fma_rows(rows, j),
            colsum_block(j, kend)
        )
    });
    let cs = csum(conv);
    let (krange, kloop) = k_range(conv, "kb");
    let name = entry(&format!("_r{rows}"), s, conv);
    let (w, kstep, lexpr, decl, st) =
        (4 * s, 4 * kl, lane_expr(s), decls(rows), stores(rows, conv));
    format!(
        "
@compute @workgroup_size({s})
fn {name}(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(subgroup_invocation_id) lane: u32,
) {{
    let col0 = wid.x * {w}u + lane * 4u;
    let row0 = wid.y * {rows}u;
    let klast = p.k - 1u;
    let mlast = p.m - 1u;
{krange}    // Strides of the stored layouts along k and along rows / columns.
    let aks = select(1u, p.m, TRANS_A);
    let ams = select(p.k, 1u, TRANS_A);
    let bks = select(p.n, 1u, TRANS_B);
    let bns = select(1u, p.k, TRANS_B);
    let cols = min(vec4<u32>(col0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(p.n - 1u));
    let bcol = cols * bns;
{rbs}
{decl}
    for ({kloop} kb += {kstep}u) {{
        let kv = vec4<u32>(kb + {lexpr} * 4u) + vec4<u32>(0u, 1u, 2u, 3u);
{live}{kprep}
{loads}
{blocks}
    }}
    if (EPI == 2u && wid.y == 0u) {{
        if (col0 < p.n) {{ {cs}col0, bsum.x); }}
        if (col0 + 1u < p.n) {{ {cs}col0 + 1u, bsum.y); }}
        if (col0 + 2u < p.n) {{ {cs}col0 + 2u, bsum.z); }}
        if (col0 + 3u < p.n) {{ {cs}col0 + 3u, bsum.w); }}
    }}
{st}
}}
"
    )
}

/// The wide kernel with 16-byte loads: N a multiple of 4 always (vec4 stores), and K for NN,
/// M for TN (A stored (K, M)), K for NT (B stored (N, K)), checked on the host.
pub fn vec4_kernel(s: u32, rows: u32, conv: bool) -> String {
    let kl = loaders(s);
    let groups = rows / 4;
    let kend = if conv { "kend" } else { "p.k" };
    // A, normal: one vec4 of this lane's 4 k per row.
    let loads_n = if conv {
        // One tap's 4 consecutive channels of each row's pixel (the channels a multiple of 4).
        lines(rows, |r| {
            format!("            x{r} = conv_a_v4(ri{r}, kx, alive);")
        })
    } else {
        lines(rows, |r| {
            format!("            x{r} = select(vec4<f32>(0.0), a4[ra{r} + kac], alive);")
        })
    };
    // A, transposed (stored (K, M)): for each of the lane's 4 k a vec4 over 4 rows, then
    // transpose in registers.
    let mut qloads = Vec::new();
    for i in 0..4 {
        for g in 0..groups {
            qloads.push(if conv {
                // 4 consecutive rows (channels of one tap) at one k (a pixel).
                format!("            let q{i}_{g} = conv_a_v4(gi{g}, kx{i}, ka + {i}u < kend);")
            } else {
                format!("            let q{i}_{g} = a4[kq{i} + rg{g}];")
            });
        }
    }
    let qloads = qloads.join("\n");
    let picks = lines(rows, |r| {
        let (g, c) = (r / 4, COMP[(r % 4) as usize]);
        format!(
            "            x{r} = lv * vec4<f32>(q0_{g}.{c}, q1_{g}.{c}, q2_{g}.{c}, q3_{g}.{c});"
        )
    });
    let (ras, rgs) = if conv {
        (
            lines(rows, |r| {
                format!("    let ri{r} = ix_row(min(row0 + {r}u, mlast));")
            }),
            lines(groups, |g| {
                format!("    let gi{g} = ix_row(4u * min(row0 / 4u + {g}u, mv - 1u));")
            }),
        )
    } else {
        (
            lines(rows, |r| {
                format!("    let ra{r} = min(row0 + {r}u, mlast) * kv4;")
            }),
            lines(groups, |g| {
                format!("    let rg{g} = min(row0 / 4u + {g}u, mv - 1u);")
            }),
        )
    };
    let xdecl = lines(rows, |r| format!("        var x{r}: vec4<f32>;"));
    let blocks = lines(kl, |j| {
        let k = 4 * j;
        format!(
            "        {{
            let kk = kb + {k}u;
            let live = kk < {kend};
            var b0: vec4<f32>;
            var b1: vec4<f32>;
            var b2: vec4<f32>;
            var b3: vec4<f32>;
            if (TRANS_B) {{
                // B stored (N, K): a vec4 over k per column, transposed in registers.
                let kq = min(kk, p.k - 4u) / 4u;
                let t0 = select(vec4<f32>(0.0), b4[bc0 + kq], live);
                let t1 = select(vec4<f32>(0.0), b4[bc1 + kq], live);
                let t2 = select(vec4<f32>(0.0), b4[bc2 + kq], live);
                let t3 = select(vec4<f32>(0.0), b4[bc3 + kq], live);
                b0 = vec4<f32>(t0.x, t1.x, t2.x, t3.x);
                b1 = vec4<f32>(t0.y, t1.y, t2.y, t3.y);
                b2 = vec4<f32>(t0.z, t1.z, t2.z, t3.z);
                b3 = vec4<f32>(t0.w, t1.w, t2.w, t3.w);
            }} else {{
                let rowb = min(kk, p.k - 1u) * nv + cv;
                b0 = select(vec4<f32>(0.0), b4[rowb], live);
                b1 = select(vec4<f32>(0.0), b4[min(kk + 1u, p.k - 1u) * nv + cv], live);
                b2 = select(vec4<f32>(0.0), b4[min(kk + 2u, p.k - 1u) * nv + cv], live);
                b3 = select(vec4<f32>(0.0), b4[min(kk + 3u, p.k - 1u) * nv + cv], live);
            }}
{}
{}
        }}",
            fma_rows(rows, j),
            colsum_block(j, kend)
        )
    });
    let lexpr = lane_expr(s);
    let (trans_prep, plain_prep) = if conv {
        let mut t = vec![
            "            let lv = vec4<f32>(vec4<u32>(ka) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(kend));"
                .to_string(),
        ];
        t.extend(
            (0..4).map(|i| format!("            let kx{i} = ix_k(min(ka + {i}u, p.k - 1u));")),
        );
        (
            t.join("\n"),
            format!(
                "            let ka = kb + {lexpr} * 4u;
            let alive = ka < kend;
            let kx = ix_k(min(ka, p.k - 1u));"
            ),
        )
    } else {
        (
            "            let lv = vec4<f32>(vec4<u32>(ka) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(p.k));
            let kq0 = min(ka, p.k - 1u) * mv;
            let kq1 = min(ka + 1u, p.k - 1u) * mv;
            let kq2 = min(ka + 2u, p.k - 1u) * mv;
            let kq3 = min(ka + 3u, p.k - 1u) * mv;"
                .to_string(),
            format!(
                "            let ka = kb / 4u + {lexpr};
            let alive = ka < kv4;
            let kac = min(ka, kv4 - 1u);"
            ),
        )
    };
    let (krange, kloop) = k_range(conv, "kb");
    let name = entry(&format!("v4_r{rows}"), s, conv);
    let (w, kstep, decl) = (4 * s, 4 * kl, decls(rows));
    let (cs4, st4) = (csum4(conv), stores4(rows, conv));
    format!(
        "
@compute @workgroup_size({s})
fn {name}(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(subgroup_invocation_id) lane: u32,
) {{
    // Alignment (checked on the host): N a multiple of 4 always (vec4 stores), and K for NN,
    // M for TN (A stored (K, M)), K for NT (B stored (N, K)): every vec4 lies inside one row.
    let col0 = wid.x * {w}u + lane * 4u;
    let row0 = wid.y * {rows}u;
    let mlast = p.m - 1u;
    let kv4 = p.k / 4u; // vec4s per row of a (M, K) or (N, K) matrix
    let nv = p.n / 4u;  // vec4s per row of a (K, N) matrix
    let mv = p.m / 4u;  // vec4s per row of a (K, M) matrix
    let cv = min(col0, p.n - 4u) / 4u;
    let bc0 = min(col0, p.n - 1u) * kv4;
    let bc1 = min(col0 + 1u, p.n - 1u) * kv4;
    let bc2 = min(col0 + 2u, p.n - 1u) * kv4;
    let bc3 = min(col0 + 3u, p.n - 1u) * kv4;
{ras}
{rgs}
{decl}
{krange}    for ({kloop} kb += {kstep}u) {{
{xdecl}
        if (TRANS_A) {{
            let ka = kb + {lexpr} * 4u;
{trans_prep}
{qloads}
{picks}
        }} else {{
{plain_prep}
{loads_n}
        }}
{blocks}
    }}
    if (EPI == 2u && wid.y == 0u && col0 < p.n) {{
        {cs4}col0, bsum);
    }}
{st4}
}}
"
    )
}
