//! Template of the shared-memory tiled kernels with double buffering (`matmul_t{BM}x{BN}`),
//! the hardware GPUs' candidates.
//!
//! 256 invocations per BM×BN tile of C, each a (BM/16)×(BN/16) register tile, K staged BK at
//! a time through two workgroup buffers of vec4s (K-major: a vec4 holds 4 rows of A or 4
//! columns of B at one k, so the inner loop reads one vec4 of each per 16 multiply-adds). The
//! next K tile is loaded into registers while the current one is multiplied, then stored into
//! the other buffer: one barrier per K tile (the layout of TF.js's matMulPackedVec4 / burn's
//! 2-D block tiling, with fusor's double buffer). Only the tile loader depends on the layout.
//! Why a template: the accumulators must be named registers and the K tile's inner loop is
//! unrolled so its indices are constants. K advances by BK per loop iteration, so lavapipe's
//! loop limit allows K up to 65,535·BK.

use super::common::{csum, csum4, stc, stc4, COMP};

/// The two workgroup buffers of a tile shape (declared at module scope, before the kernel).
pub fn tiled_storage(bm: u32, bn: u32, bk: u32) -> String {
    format!(
        "var<workgroup> sa_{bm}x{bn}: array<vec4<f32>, {}>; // [buffer][k][row/4]\n\
         var<workgroup> sb_{bm}x{bn}: array<vec4<f32>, {}>; // [buffer][k][col/4]\n",
        2 * bk * bm / 4,
        2 * bk * bn / 4
    )
}

/// The tile shape of one kernel, and what its loader needs.
struct Tile {
    bm: u32,
    bn: u32,
    bk: u32,
    v4: bool,
    conv: bool,
    sa: String,
    sb: String,
    kend: &'static str,
}

impl Tile {
    fn m4(&self) -> u32 {
        self.bm / 4
    }
    fn n4(&self) -> u32 {
        self.bn / 4
    }
    /// Scalars of A and B per invocation and K tile (scalar path).
    fn na(&self) -> u32 {
        self.bm * self.bk / 256
    }
    fn nb(&self) -> u32 {
        self.bk * self.bn / 256
    }
    /// Vec4s per invocation (v4 path).
    fn na4(&self) -> u32 {
        (self.bm * self.bk / 4 / 256).max(1)
    }
    fn nb4(&self) -> u32 {
        (self.bk * self.bn / 4 / 256).max(1)
    }

    /// Loads this invocation's share of the K tile at `k0` into registers.
    fn load_regs(&self, k0: &str) -> Vec<String> {
        let (bm, bn, bk, kend) = (self.bm, self.bn, self.bk, self.kend);
        let (m4, n4) = (self.m4(), self.n4());
        let mut o = Vec::new();
        if !self.v4 {
            for r in 0..self.na() {
                o.push(format!("        {{ let e = (li + {}u);", 256 * r));
                o.push(format!(
                    "          let rr = select(e / {bk}u, e % {bm}u, TRANS_A);"
                ));
                o.push(format!(
                    "          let kk = select(e % {bk}u, e / {bm}u, TRANS_A);"
                ));
                o.push(format!(
                    "          let ok = row0 + rr < p.m && {k0} + kk < {kend};"
                ));
                o.push(if self.conv {
                    format!("          pa{r} = conv_a(ix_row(min(row0 + rr, mlast)), ix_k(min({k0} + kk, klast)), ok); }}")
                } else {
                    format!("          pa{r} = select(0.0, a[min(row0 + rr, mlast) * ams + min({k0} + kk, klast) * aks], ok); }}")
                });
            }
            for r in 0..self.nb() {
                o.push(format!("        {{ let e = (li + {}u);", 256 * r));
                o.push(format!(
                    "          let kk = select(e / {bn}u, e % {bk}u, TRANS_B);"
                ));
                o.push(format!(
                    "          let cc = select(e % {bn}u, e / {bk}u, TRANS_B);"
                ));
                o.push(format!(
                    "          let ok = {k0} + kk < {kend} && col0 + cc < p.n;"
                ));
                o.push(format!("          pb{r} = select(0.0, b[min({k0} + kk, klast) * bks + min(col0 + cc, nlast) * bns], ok); }}"));
            }
        } else {
            let (ea, eb, bk4) = (bm * bk / 4, bk * bn / 4, bk / 4);
            for r in 0..self.na4() {
                o.push(format!("        {{ let e = (li + {}u);", 256 * r));
                o.push("          if (TRANS_A) {".into());
                o.push(format!(
                    "              let kk = e / {m4}u;  let q = e % {m4}u;"
                ));
                o.push(format!(
                    "              let ok = {k0} + kk < {kend} && e < {ea}u;"
                ));
                o.push(if self.conv {
                    format!("              pa{r} = conv_a_v4(ix_row(4u * min(row0 / 4u + q, mv - 1u)), ix_k(min({k0} + kk, klast)), ok);")
                } else {
                    format!("              pa{r} = select(vec4<f32>(0.0), a4[min({k0} + kk, klast) * mv + min(row0 / 4u + q, mv - 1u)], ok);")
                });
                o.push("          } else {".into());
                o.push(format!(
                    "              let rr = e / {bk4}u;  let q = e % {bk4}u;"
                ));
                if self.conv {
                    o.push(format!("              let ok = row0 + rr < p.m && {k0} + 4u * q < kend && e < {ea}u;"));
                    o.push(format!("              pa{r} = conv_a_v4(ix_row(min(row0 + rr, mlast)), ix_k(min({k0} + 4u * q, klast)), ok);"));
                } else {
                    o.push(format!("              let ok = row0 + rr < p.m && {k0} / 4u + q < kv4 && e < {ea}u;"));
                    o.push(format!("              pa{r} = select(vec4<f32>(0.0), a4[min(row0 + rr, mlast) * kv4 + min({k0} / 4u + q, kv4 - 1u)], ok);"));
                }
                o.push("          } }".into());
            }
            for r in 0..self.nb4() {
                o.push(format!("        {{ let e = (li + {}u);", 256 * r));
                o.push("          if (TRANS_B) {".into());
                o.push(format!(
                    "              let cc = e / {bk4}u;  let q = e % {bk4}u;"
                ));
                // TRANS_B: never a conv.
                o.push(format!(
                    "              let ok = col0 + cc < p.n && {k0} / 4u + q < kv4 && e < {eb}u;"
                ));
                o.push(format!("              pb{r} = select(vec4<f32>(0.0), b4[min(col0 + cc, nlast) * kv4 + min({k0} / 4u + q, kv4 - 1u)], ok);"));
                o.push("          } else {".into());
                o.push(format!(
                    "              let kk = e / {n4}u;  let q = e % {n4}u;"
                ));
                o.push(format!(
                    "              let ok = {k0} + kk < {kend} && e < {eb}u;"
                ));
                o.push(format!("              pb{r} = select(vec4<f32>(0.0), b4[min({k0} + kk, klast) * nv + min(col0 / 4u + q, nv - 1u)], ok);"));
                o.push("          } }".into());
            }
        }
        o
    }

    /// Stores the registers [`Tile::load_regs`] filled into workgroup buffer `buf`.
    fn store_regs(&self, buf: &str) -> Vec<String> {
        let (bm, bn, bk) = (self.bm, self.bn, self.bk);
        let (m4, n4, sa, sb) = (self.m4(), self.n4(), &self.sa, &self.sb);
        let (abase, bbase) = (bk * m4, bk * n4);
        let mut o = Vec::new();
        if !self.v4 {
            for r in 0..self.na() {
                o.push(format!("        {{ let e = li + {}u;", 256 * r));
                o.push(format!(
                    "          let rr = select(e / {bk}u, e % {bm}u, TRANS_A);"
                ));
                o.push(format!(
                    "          let kk = select(e % {bk}u, e / {bm}u, TRANS_A);"
                ));
                o.push(format!(
                    "          {sa}[{buf} * {abase}u + kk * {m4}u + rr / 4u][rr % 4u] = pa{r}; }}"
                ));
            }
            for r in 0..self.nb() {
                o.push(format!("        {{ let e = li + {}u;", 256 * r));
                o.push(format!(
                    "          let kk = select(e / {bn}u, e % {bk}u, TRANS_B);"
                ));
                o.push(format!(
                    "          let cc = select(e % {bn}u, e / {bk}u, TRANS_B);"
                ));
                o.push(format!(
                    "          {sb}[{buf} * {bbase}u + kk * {n4}u + cc / 4u][cc % 4u] = pb{r}; }}"
                ));
            }
        } else {
            let (ea, eb, bk4) = (bm * bk / 4, bk * bn / 4, bk / 4);
            let comps = ["x", "y", "z", "w"];
            let kofs = ["k4", "(k4 + 1u)", "(k4 + 2u)", "(k4 + 3u)"];
            for r in 0..self.na4() {
                o.push(format!("        {{ let e = li + {}u;", 256 * r));
                o.push(format!("          if (e < {ea}u) {{"));
                o.push("            if (TRANS_A) {".into());
                o.push(format!("              {sa}[{buf} * {abase}u + (e / {m4}u) * {m4}u + e % {m4}u] = pa{r};"));
                o.push("            } else {".into());
                o.push(format!(
                    "              let rr = e / {bk4}u;  let k4 = (e % {bk4}u) * 4u;"
                ));
                o.push(format!(
                    "              let base = {buf} * {abase}u + rr / 4u;"
                ));
                for (c, k) in comps.iter().zip(kofs) {
                    o.push(format!(
                        "              {sa}[base + {k} * {m4}u][rr % 4u] = pa{r}.{c};"
                    ));
                }
                o.push("            } } }".into());
            }
            for r in 0..self.nb4() {
                o.push(format!("        {{ let e = li + {}u;", 256 * r));
                o.push(format!("          if (e < {eb}u) {{"));
                o.push("            if (TRANS_B) {".into());
                o.push(format!(
                    "              let cc = e / {bk4}u;  let k4 = (e % {bk4}u) * 4u;"
                ));
                o.push(format!(
                    "              let base = {buf} * {bbase}u + cc / 4u;"
                ));
                for (c, k) in comps.iter().zip(kofs) {
                    o.push(format!(
                        "              {sb}[base + {k} * {n4}u][cc % 4u] = pb{r}.{c};"
                    ));
                }
                o.push("            } else {".into());
                o.push(format!("              {sb}[{buf} * {bbase}u + (e / {n4}u) * {n4}u + e % {n4}u] = pb{r};"));
                o.push("            } } }".into());
            }
        }
        o
    }
}

/// The shared-memory tiled kernel; with `conv`, its convolution twin (the tile loader reads A
/// through implicit im2col; K limited to the work-group's chunk).
pub fn tiled(bm: u32, bn: u32, bk: u32, v4: bool, conv: bool) -> String {
    let t = Tile {
        bm,
        bn,
        bk,
        v4,
        conv,
        sa: format!("sa_{bm}x{bn}"),
        sb: format!("sb_{bm}x{bn}"),
        kend: if conv { "kend" } else { "p.k" },
    };
    let (th, tw) = (bm / 64, bn / 64); // vec4 row groups and column groups per invocation
    let (m4, n4) = (t.m4(), t.n4());
    let name = format!(
        "{}_t{bm}x{bn}{}_forward",
        if conv { "conv2d" } else { "matmul" },
        if v4 { "v4" } else { "" }
    );
    let mut l: Vec<String> = Vec::new();
    l.push(format!(
        "
@compute @workgroup_size(256)
fn {name}(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
) {{
    let tx = li % 16u;
    let ty = li / 16u;
    let row0 = wid.y * {bm}u;
    let col0 = wid.x * {bn}u;
    let klast = p.k - 1u;
    let mlast = p.m - 1u;
    let nlast = p.n - 1u;"
    ));
    let bk1 = bk - 1;
    if conv {
        l.push("    let kbeg = k_begin(wid.z);".into());
        l.push("    let kend = k_end(wid.z, p.k);".into());
        l.push(format!("    let tiles = (kend - kbeg + {bk1}u) / {bk}u;"));
    } else {
        l.push(format!("    let tiles = (p.k + {bk1}u) / {bk}u;"));
    }
    for h in 0..th {
        for i in 0..4 {
            for j in 0..tw {
                l.push(format!("    var c{h}_{i}_{j} = vec4<f32>(0.0);"));
            }
        }
    }
    for j in 0..tw {
        l.push(format!("    var bsum{j} = vec4<f32>(0.0);"));
    }
    l.push(if !v4 {
        "    let aks = select(1u, p.m, TRANS_A);
    let ams = select(p.k, 1u, TRANS_A);
    let bks = select(p.n, 1u, TRANS_B);
    let bns = select(1u, p.k, TRANS_B);"
            .into()
    } else {
        "    let kv4 = p.k / 4u;
    let nv = p.n / 4u;
    let mv = p.m / 4u;"
            .into()
    });
    let rt = if v4 { "vec4<f32>" } else { "f32" };
    for r in 0..(if v4 { t.na4() } else { t.na() }) {
        l.push(format!("    var pa{r}: {rt};"));
    }
    for r in 0..(if v4 { t.nb4() } else { t.nb() }) {
        l.push(format!("    var pb{r}: {rt};"));
    }
    l.extend(t.load_regs(if conv { "kbeg" } else { "0u" }));
    l.extend(t.store_regs("0u"));
    l.push("    workgroupBarrier();".into());
    l.push("    for (var t = 0u; t < tiles; t++) {".into());
    l.push("        let cur = t % 2u;".into());
    l.push("        let more = t + 1u < tiles;".into());
    l.push("        if (more) {".into());
    l.push(format!(
        "            let k1 = {}(t + 1u) * {bk}u;",
        if conv { "kbeg + " } else { "" }
    ));
    l.extend(t.load_regs("k1").into_iter().map(|s| format!("    {s}")));
    l.push("        }".into());
    l.push(format!("        let sab = cur * {}u;", bk * m4));
    l.push(format!("        let sbb = cur * {}u;", bk * n4));
    let (sa, sb) = (&t.sa, &t.sb);
    for kk in 0..bk {
        for h in 0..th {
            l.push(format!(
                "        let a{kk}_{h} = {sa}[sab + {}u + ty + {}u];",
                kk * m4,
                16 * h
            ));
        }
        for j in 0..tw {
            l.push(format!(
                "        let b{kk}_{j} = {sb}[sbb + {}u + tx + {}u];",
                kk * n4,
                16 * j
            ));
        }
        for h in 0..th {
            for (i, c) in COMP.iter().enumerate() {
                for j in 0..tw {
                    l.push(format!(
                        "        c{h}_{i}_{j} = fma(vec4<f32>(a{kk}_{h}.{c}), b{kk}_{j}, c{h}_{i}_{j});"
                    ));
                }
            }
        }
    }
    l.push("        if (EPI == 2u) {".into());
    for j in 0..tw {
        let sum = (0..bk)
            .map(|kk| format!("b{kk}_{j}"))
            .collect::<Vec<_>>()
            .join(" + ");
        l.push(format!("            bsum{j} += {sum};"));
    }
    l.push("        }".into());
    l.push("        if (more) {".into());
    l.push("            let nxt = 1u - cur;".into());
    l.extend(t.store_regs("nxt").into_iter().map(|s| format!("    {s}")));
    l.push("        }".into());
    l.push("        workgroupBarrier();".into());
    l.push("    }".into());
    l.push("    if (EPI == 2u && wid.y == 0u && ty == 0u) {".into());
    for j in 0..tw {
        l.push(format!(
            "        let cs{j} = col0 + (tx + {}u) * 4u;",
            16 * j
        ));
        if v4 {
            l.push(format!(
                "        if (cs{j} < p.n) {{ {}cs{j}, bsum{j}); }}",
                csum4(conv)
            ));
        } else {
            for (e, c) in COMP.iter().enumerate() {
                l.push(format!(
                    "        if (cs{j} + {e}u < p.n) {{ {}cs{j} + {e}u, bsum{j}.{c}); }}",
                    csum(conv)
                ));
            }
        }
    }
    l.push("    }".into());
    let st = stc(conv);
    for h in 0..th {
        for i in 0..4 {
            l.push(format!(
                "    {{ let row = row0 + (ty + {}u) * 4u + {i}u;",
                16 * h
            ));
            for j in 0..tw {
                l.push(format!("      let cc{j} = col0 + (tx + {}u) * 4u;", 16 * j));
                l.push(if v4 {
                    format!("      {}row, cc{j}, c{h}_{i}_{j});", stc4(conv))
                } else {
                    format!(
                        "      {st}row, cc{j}, c{h}_{i}_{j}.x); {st}row, cc{j} + 1u, c{h}_{i}_{j}.y); \
                         {st}row, cc{j} + 2u, c{h}_{i}_{j}.z); {st}row, cc{j} + 3u, c{h}_{i}_{j}.w);"
                    )
                });
            }
            l.push("    }".into());
        }
    }
    l.push("}".into());
    l.join("\n") + "\n"
}
