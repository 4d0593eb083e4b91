//! Templates of the register-blocked kernels (`matmul_rb{TM}x{TN}`, no shared memory) and the
//! narrow kernel without subgroups (`matmul_rb_narrow`), for adapters without usable
//! subgroups and as a GPU tuner candidate.
//!
//! 8×8 invocations, each owning a TM×TN block of C (TM consecutive rows, TN/4 groups of 4
//! columns interleaved across the 8 columns of invocations so neighbours load neighbouring
//! 16-byte words of B). Per k an invocation loads TM values of A and TN values of B for
//! TM·TN multiply-adds. On llvmpipe, where every per-lane load is a scalar loop, that ratio is
//! what sets the speed; on a GPU the caches serve the repeated loads (the webgpu-blas line of
//! kernels). Why a template: the accumulators must be named registers (a local array indexed
//! in a loop is clamped by naga's bounds checks and may spill). K advances by 4 per loop
//! iteration with the steps written out, so lavapipe's loop limit allows K up to 262,140.

use super::common::{csum, csum4, lines, stc, stc4, COMP, NARROW_FOLD};

/// The register-blocked kernel; with `conv`, its convolution twin (A through implicit
/// im2col, K limited to the work-group's chunk).
pub fn blocked(tm: u32, tn: u32, v4: bool, conv: bool) -> String {
    let g = tn / 4; // vec4 column groups per invocation
    let kend = if conv { "kend" } else { "p.k" };
    let name = format!(
        "{}_rb{tm}x{tn}{}_forward",
        if conv { "conv2d" } else { "matmul" },
        if v4 { "v4" } else { "" }
    );
    let mut l: Vec<String> = Vec::new();
    let (rm, cn) = (8 * tm, 8 * tn);
    l.push(format!(
        "
@compute @workgroup_size(8, 8)
fn {name}(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {{
    let row0 = wid.y * {rm}u + lid.y * {tm}u;
    let colw = wid.x * {cn}u; // the work-group's first column
    let klast = p.k - 1u;
    let mlast = p.m - 1u;
    let nlast = p.n - 1u;"
    ));
    if conv {
        l.push("    let kbeg = k_begin(wid.z);".into());
        l.push("    let kend = k_end(wid.z, p.k);".into());
    }
    for j in 0..g {
        l.push(format!(
            "    let col{j} = colw + (lid.x + {}u) * 4u;",
            8 * j
        ));
    }
    for i in 0..tm {
        for j in 0..g {
            l.push(format!("    var c{i}_{j} = vec4<f32>(0.0);"));
        }
    }
    for j in 0..g {
        l.push(format!("    var bsum{j} = vec4<f32>(0.0);"));
    }
    if !v4 {
        l.push(
            "    let aks = select(1u, p.m, TRANS_A);
    let ams = select(p.k, 1u, TRANS_A);
    let bks = select(p.n, 1u, TRANS_B);
    let bns = select(1u, p.k, TRANS_B);"
                .into(),
        );
        for i in 0..tm {
            l.push(if conv {
                format!("    let ri{i} = ix_row(min(row0 + {i}u, mlast));")
            } else {
                format!("    let ra{i} = min(row0 + {i}u, mlast) * ams;")
            });
        }
        for j in 0..g {
            l.push(format!("    let bc{j} = min(vec4<u32>(col{j}) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(nlast)) * bns;"));
        }
    } else {
        l.push(
            "    let kv4 = p.k / 4u;
    let nv = p.n / 4u;
    let mv = p.m / 4u;"
                .into(),
        );
        for i in 0..tm {
            l.push(if conv {
                format!("    let ri{i} = ix_row(min(row0 + {i}u, mlast));")
            } else {
                format!("    let ra{i} = min(row0 + {i}u, mlast) * kv4;")
            });
        }
        for q in 0..tm / 4 {
            l.push(if conv {
                format!("    let gq{q} = ix_row(4u * min(row0 / 4u + {q}u, mv - 1u));")
            } else {
                format!("    let rq{q} = min(row0 / 4u + {q}u, mv - 1u);")
            });
        }
        for j in 0..g {
            l.push(format!("    let cv{j} = min(col{j}, p.n - 4u) / 4u;"));
            for e in 0..4 {
                l.push(format!(
                    "    let bt{j}_{e} = min(col{j} + {e}u, nlast) * kv4;"
                ));
            }
        }
    }
    l.push(if conv {
        "    for (var k0 = kbeg; k0 < kend; k0 += 4u) {".into()
    } else {
        "    for (var k0 = 0u; k0 < p.k; k0 += 4u) {".into()
    });
    l.push(format!("        let live = vec4<f32>(vec4<u32>(k0) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>({kend}));"));
    // A values: x{i} is a vec4 over the 4 k of row i.
    if !v4 && conv {
        l.push("        let kx = ix_k4(min(vec4<u32>(k0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(klast)));".into());
        l.push(
            "        let lk = vec4<u32>(k0) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(kend);".into(),
        );
        for i in 0..tm {
            l.push(format!("        let x{i} = conv_a4(ri{i}, kx, lk);"));
        }
    } else if !v4 {
        l.push("        let kc = min(vec4<u32>(k0) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(klast)) * aks;".into());
        for i in 0..tm {
            l.push(format!("        let x{i} = live * vec4<f32>(a[ra{i} + kc.x], a[ra{i} + kc.y], a[ra{i} + kc.z], a[ra{i} + kc.w]);"));
        }
    } else {
        for i in 0..tm {
            l.push(format!("        var x{i}: vec4<f32>;"));
        }
        l.push("        if (TRANS_A) {".into());
        for u in 0..4 {
            l.push(if conv {
                format!("            let kx{u} = ix_k(min(k0 + {u}u, klast));")
            } else {
                format!("            let kq{u} = min(k0 + {u}u, klast) * mv;")
            });
        }
        for u in 0..4 {
            for q in 0..tm / 4 {
                l.push(if conv {
                    format!("            let q{u}_{q} = conv_a_v4(gq{q}, kx{u}, k0 + {u}u < kend);")
                } else {
                    format!("            let q{u}_{q} = a4[kq{u} + rq{q}];")
                });
            }
        }
        for i in 0..tm {
            let (q, c) = (i / 4, COMP[(i % 4) as usize]);
            l.push(format!(
                "            x{i} = live * vec4<f32>(q0_{q}.{c}, q1_{q}.{c}, q2_{q}.{c}, q3_{q}.{c});"
            ));
        }
        l.push("        } else {".into());
        if conv {
            l.push("            let kx = ix_k(min(k0, klast));".into());
            for i in 0..tm {
                l.push(format!(
                    "            x{i} = conv_a_v4(ri{i}, kx, k0 < kend);"
                ));
            }
        } else {
            l.push("            let ka = min(k0 / 4u, kv4 - 1u);".into());
            for i in 0..tm {
                l.push(format!("            x{i} = a4[ra{i} + ka];"));
            }
        }
        l.push("        }".into());
    }
    // B values: b{u}_{j} is a vec4 over 4 columns of group j at k0 + u.
    if !v4 {
        for u in 0..4 {
            l.push(format!("        let kb{u} = min(k0 + {u}u, klast) * bks;"));
        }
        for u in 0..4 {
            for j in 0..g {
                l.push(format!("        let b{u}_{j} = vec4<f32>(b[kb{u} + bc{j}.x], b[kb{u} + bc{j}.y], b[kb{u} + bc{j}.z], b[kb{u} + bc{j}.w]);"));
            }
        }
    } else {
        for u in 0..4 {
            for j in 0..g {
                l.push(format!("        var b{u}_{j}: vec4<f32>;"));
            }
        }
        l.push("        if (TRANS_B) {".into());
        l.push("            let kq = min(k0 / 4u, kv4 - 1u);".into());
        for j in 0..g {
            for e in 0..4 {
                l.push(format!("            let t{j}_{e} = b4[bt{j}_{e} + kq];"));
            }
        }
        for (u, c) in COMP.iter().enumerate() {
            for j in 0..g {
                l.push(format!(
                    "            b{u}_{j} = vec4<f32>(t{j}_0.{c}, t{j}_1.{c}, t{j}_2.{c}, t{j}_3.{c});"
                ));
            }
        }
        l.push("        } else {".into());
        for u in 0..4 {
            for j in 0..g {
                l.push(format!(
                    "            b{u}_{j} = live[{u}] * b4[min(k0 + {u}u, klast) * nv + cv{j}];"
                ));
            }
        }
        l.push("        }".into());
    }
    for (u, c) in COMP.iter().enumerate() {
        for i in 0..tm {
            for j in 0..g {
                l.push(format!(
                    "        c{i}_{j} = fma(vec4<f32>(x{i}.{c}), b{u}_{j}, c{i}_{j});"
                ));
            }
        }
    }
    l.push("        if (EPI == 2u) {".into());
    for j in 0..g {
        l.push(format!("            bsum{j} += live.x * b0_{j} + live.y * b1_{j} + live.z * b2_{j} + live.w * b3_{j};"));
    }
    l.push("        }".into());
    l.push("    }".into());
    l.push("    if (EPI == 2u && wid.y == 0u && lid.y == 0u) {".into());
    for j in 0..g {
        if v4 {
            l.push(format!(
                "        if (col{j} < p.n) {{ {}col{j}, bsum{j}); }}",
                csum4(conv)
            ));
        } else {
            for (e, c) in COMP.iter().enumerate() {
                l.push(format!(
                    "        if (col{j} + {e}u < p.n) {{ {}col{j} + {e}u, bsum{j}.{c}); }}",
                    csum(conv)
                ));
            }
        }
    }
    l.push("    }".into());
    let st = stc(conv);
    for i in 0..tm {
        for j in 0..g {
            l.push(if v4 {
                format!("    {}row0 + {i}u, col{j}, c{i}_{j});", stc4(conv))
            } else {
                format!(
                    "    {st}row0 + {i}u, col{j}, c{i}_{j}.x); {st}row0 + {i}u, col{j} + 1u, c{i}_{j}.y); \
                     {st}row0 + {i}u, col{j} + 2u, c{i}_{j}.z); {st}row0 + {i}u, col{j} + 3u, c{i}_{j}.w);"
                )
            });
        }
    }
    l.push("}".into());
    l.join("\n") + "\n"
}

/// C with at most 16 columns, without subgroups: an invocation per row of C, every column in
/// its own accumulator, 64 rows per work-group.
pub fn narrow(conv: bool) -> String {
    let decl = lines(16, |c| format!("    var c{c} = 0.0;"));
    let sdecl = lines(16, |c| format!("    var s{c} = 0.0;"));
    let steps = lines(4, |u| {
        let xa = if conv {
            "conv_load_a(row, kk, kend)"
        } else {
            "load_a(row, kk)"
        };
        let mut body = vec![
            format!("        {{ let kk = k0 + {u}u;"),
            format!("          let x = {xa};"),
        ];
        for c in 0..16 {
            let mut lb = format!("load_b(kk, {c}u)");
            if conv {
                lb = format!("select(0.0, {lb}, kk < kend)");
            }
            body.push(format!("          let b{c} = {lb};"));
            body.push(format!("          c{c} = fma(x, b{c}, c{c});"));
        }
        body.push("          if (EPI == 2u) {".into());
        for c in 0..16 {
            body.push(format!("              s{c} += b{c};"));
        }
        body.push("          }".into());
        body.push("        }".into());
        body.join("\n")
    });
    let st = lines(16, |c| format!("    {}row, {c}u, c{c});", stc(conv)));
    let cs = lines(16, |c| {
        format!("        if ({c}u < p.n) {{ {}{c}u, s{c}); }}", csum(conv))
    });
    let (fname, kr, kl, args) = if conv {
        (
            "conv2d_rb_narrow_forward",
            "    let kbeg = k_begin(wid.z);\n    let kend = k_end(wid.z, p.k);\n",
            "var k0 = kbeg; k0 < kend;",
            "@builtin(global_invocation_id) gid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>",
        )
    } else {
        (
            "matmul_rb_narrow_forward",
            "",
            "var k0 = 0u; k0 < p.k;",
            "@builtin(global_invocation_id) gid: vec3<u32>",
        )
    };
    let fold_rows = NARROW_FOLD * 64;
    format!(
        "
// C with at most 16 columns, without subgroups: an invocation per row of C, every column in
// its own accumulator, 64 rows per work-group. B's row is the same for every invocation (a
// cache hit on a GPU); with column sums every invocation sums it too, and the first stores.
// Work-group y counts blocks of {NARROW_FOLD} work-groups (a grid dimension holds 65,535).
@compute @workgroup_size(64)
fn {fname}({args}) {{
    let row = gid.x + gid.y * {fold_rows}u;
{decl}
{sdecl}
{kr}    for ({kl} k0 += 4u) {{
{steps}
    }}
    if (EPI == 2u && row == 0u) {{
{cs}
    }}
{st}
}}
"
    )
}
