//! Templates of the subgroup kernels for a classifier's last layer: narrow (C with at most 16
//! columns, a lane per row) and shallow (K at most 16, a lane per column). Both keep every
//! one of the 16 columns or k in its own named register, for the reasons the wide templates
//! give ([`super::subgroup`]).

use super::common::{csum, lines, stc, NARROW_FOLD};
use super::subgroup::entry;

/// How many registers of S lanes hold 16 values (one per lane each).
fn groups16(s: u32) -> u32 {
    (16 / s).max(1)
}

/// The lane index within 16 values.
fn lanes16(s: u32) -> &'static str {
    if s <= 16 {
        "lane"
    } else {
        "(lane % 16u)"
    }
}

/// Which register (`i`) and lane (`l`) of a broadcast hold value `c` of 16.
fn reg_lane(c: u32, s: u32) -> (u32, u32) {
    if s < 16 {
        (c / s, c % s)
    } else {
        (0, c)
    }
}

/// C with at most 16 columns: a lane per row, every column in its own accumulator.
///
/// Per k, each lane loads its row's A value and the B values of columns lane + S·g (g below
/// 16/S); `subgroupBroadcast` hands every lane all of B's row. K advances 4 at a time with the
/// four steps written out, so lavapipe's loop limit (65,535 iterations) allows K up to
/// 262,140.
pub fn narrow_kernel(s: u32, conv: bool) -> String {
    let g = groups16(s);
    let l16 = lanes16(s);
    let decl = lines(16, |c| format!("    var c{c} = 0.0;"));
    let sdecl = lines(g, |i| format!("    var cs{i} = 0.0;"));
    let steps = lines(4, |u| {
        // The conv twin reads A through implicit im2col and masks B past its chunk (a split
        // K's next chunk is not zero).
        let xa = if conv {
            "conv_load_a(row, kk, kend)"
        } else {
            "load_a(row, kk)"
        };
        let mut body = vec![
            "        {".to_string(),
            format!("            let kk = k4 + {u}u;"),
            format!("            let x = {xa};"),
        ];
        for i in 0..g {
            let mut lb = format!("load_b(kk, {l16} + {}u)", s * i);
            if conv {
                lb = format!("select(0.0, {lb}, kk < kend)");
            }
            body.push(format!("            let bv{i} = {lb};"));
            body.push(format!("            cs{i} += bv{i};"));
        }
        for c in 0..16 {
            let (i, l) = reg_lane(c, s);
            body.push(format!(
                "            c{c} = fma(x, subgroupBroadcast(bv{i}, {l}u), c{c});"
            ));
        }
        body.push("        }".into());
        body.join("\n")
    });
    let cst = lines(g, |i| {
        let mut cond = format!("{l16} + {}u < p.n", s * i);
        if s > 16 {
            cond = format!("lane < 16u && {cond}");
        }
        format!(
            "        if ({cond}) {{ {}{l16} + {}u, cs{i}); }}",
            csum(conv),
            s * i
        )
    });
    let stf = stc(conv);
    let st = lines(16, |c| format!("    {stf}row, {c}u, c{c});"));
    let (krange, kloop) = if conv {
        (
            "    let kbeg = k_begin(wid.z);\n    let kend = k_end(wid.z, p.k);\n",
            "var k4 = kbeg; k4 < kend;",
        )
    } else {
        ("", "var k4 = 0u; k4 < p.k;")
    };
    let name = entry("_narrow", s, conv);
    format!(
        "
// C with at most 16 columns (the last layer of a classifier and its weight gradient): a lane
// per row of C, {s} rows per work-group, every column in its own accumulator. Per k a lane
// loads A[row, k] and {g} value(s) of B's row; subgroupBroadcast gives every lane the whole
// row of B. Any layout and epilogue (store_c and store_colsum do the rest). Loads past K
// return zero, so the 4-step unrolling needs no tail. Work-group y counts blocks of
// {NARROW_FOLD} work-groups (a grid dimension holds 65,535; rows past M store nothing).
@compute @workgroup_size({s})
fn {name}(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(subgroup_invocation_id) lane: u32,
) {{
    let row = (wid.x + wid.y * {NARROW_FOLD}u) * {s}u + lane;
{decl}
{sdecl}
{krange}    for ({kloop} k4 += 4u) {{
{steps}
    }}
    if (EPI == 2u && wid.x == 0u && wid.y == 0u) {{
{cst}
    }}
{st}
}}
"
    )
}

/// K at most 16: a lane per column of C, op(B)'s column held in registers.
///
/// Per row, a lane loads A values at k = lane + S·g; `subgroupBroadcast` hands every lane the
/// whole row of op(A).
pub fn shallow_kernel(s: u32, conv: bool) -> String {
    let g = groups16(s);
    let l16 = lanes16(s);
    let bl = lines(16, |kk| format!("    let b{kk} = load_b({kk}u, col);"));
    let (kprep, loads) = if conv {
        // The k sides are the lane's own for every row: decomposed once; a row's side once
        // per row.
        let kprep = lines(g, |i| {
            let o = s * i;
            format!(
                "    let kx{i} = ix_k(min({l16} + {o}u, p.k - 1u));\n    let kl{i} = {l16} + {o}u < p.k;"
            )
        }) + "\n";
        let loads = "        let ri = ix_row(row);\n".to_string()
            + &lines(g, |i| {
                format!("        let a{i} = conv_a(ri, kx{i}, kl{i});")
            });
        (kprep, loads)
    } else {
        let loads = lines(g, |i| {
            format!("        let a{i} = load_a(row, {l16} + {}u);", s * i)
        });
        (String::new(), loads)
    };
    let fmas = lines(16, |kk| {
        let (i, l) = reg_lane(kk, s);
        format!("        acc = fma(subgroupBroadcast(a{i}, {l}u), b{kk}, acc);")
    });
    let bsum = (0..16)
        .map(|kk| format!("b{kk}"))
        .collect::<Vec<_>>()
        .join(" + ");
    let name = entry("_shallow", s, conv);
    let st = if conv { "conv_store(0u, " } else { "store_c(" };
    let cs = csum(conv).replace("wid.z", "0u");
    format!(
        "
// K at most 16 (the input gradient through a classifier's last layer): a lane per column of
// C, {s} columns and SHALLOW_ROWS rows per work-group, op(B)'s column (K values, zero past K) in
// registers. Per row a lane loads {g} value(s) of op(A)'s row; subgroupBroadcast gives every
// lane the whole row. Any layout and epilogue (store_c and store_colsum do the rest).
@compute @workgroup_size({s})
fn {name}(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(subgroup_invocation_id) lane: u32,
) {{
    let col = wid.x * {s}u + lane;
    let row0 = wid.y * SHALLOW_ROWS;
{bl}
    let rows = min(SHALLOW_ROWS, p.m - min(row0, p.m));
{kprep}    for (var r = 0u; r < rows; r++) {{
        let row = row0 + r;
        var acc = 0.0;
{loads}
{fmas}
        {st}row, col, acc);
    }}
    if (EPI == 2u && wid.y == 0u && col < p.n) {{
        {cs}col, {bsum});
    }}
}}
"
    )
}
