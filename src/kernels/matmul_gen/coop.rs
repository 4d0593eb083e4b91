//! Template of the tensor-core kernels (`matmul_coop{S}{h|f}_j{J}`): cooperative matrices
//! (WGSL's `wgpu_cooperative_matrix`: Vulkan's `VK_KHR_cooperative_matrix`, Metal's simdgroup
//! matrices) multiplying S×S fragments, f16 (`h`) or f32 (`f`) operands, f32 accumulators.
//!
//! Tensors stay f32 in memory. Per K stage the work-group's 256 (S = 16) or 128 (S = 8)
//! invocations load the BM×BK tile of op(A) and the BK×BN tile of op(B) from global memory
//! and convert them to the fragments' type as they store them into workgroup memory (row
//! major: A `[row][k]`, B `[k][col]`; no separate conversion pass). Each subgroup owns
//! warp tiles of WM×WN fragments: it `coopLoadT`s their A and B fragments from workgroup
//! memory and `coopMultiplyAdd`s into its f32 accumulators. At the end each accumulator is
//! `coopStoreT`d into the subgroup's slot of a workgroup scratch, and the subgroup's lanes
//! read it back and write C through `store_c`: the same epilogue as every other kernel
//! (bias, activation, gate, accumulate, the fused optimizer), bounds-guarded, so no shape
//! needs to be a multiple of a tile. EPI 2's column sums of op(B) are summed in f32 from
//! global memory by the first row of work-groups (the f16 staging would round them).
//!
//! Subgroups: a cooperative matrix belongs to one subgroup, and wgpu cannot fix the
//! subgroup size, so the kernel reads `subgroup_id` and `num_subgroups`: subgroup g owns
//! warp tiles g, g + n, g + 2n, …; `J` (a template parameter) is how many it may own, from
//! the most lanes the adapter says a subgroup may have (NVIDIA's 32: 8 subgroups of a
//! 256-invocation work-group, one warp tile each, J = 1). Cooperative operations must run
//! in uniform control flow (naga checks it, and `subgroup_id` is not uniform), so every
//! subgroup runs all J slots: a slot past the last warp tile multiplies the last one's
//! fragments again and stores into a spare scratch slot nobody reads; only the epilogue's
//! reads are guarded. With the adapter's subgroups as wide as J assumes, no slot idles.
//!
//! Only the NN, NT and TN matmuls (and their batched rewrite) have these kernels; the
//! convolutions' implicit GEMMs run the shared-memory tiles instead
//! ([`crate::kernels::matmul_variant::Variant::conv_fallback`]). Single-buffered: two
//! barriers per K stage (a first version, to be measured on the first GPU run).

use super::common::csum;

/// One tensor-core kernel's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Coop {
    /// Fragment size S (8 or 16): `coop_mat{S}x{S}`, M = N = K = S.
    pub s: u32,
    /// f16 operands (else f32).
    pub half: bool,
    /// Warp tiles a subgroup may own (see the module docs).
    pub j: u32,
}

/// The invocations of a work-group with `s`×`s` fragments.
pub fn invocations(s: u32) -> u32 {
    if s == 16 {
        256
    } else {
        128
    }
}

/// (BM, BN, BK, WM, WN): the work-group's tile of C, its K stage, and a warp tile in
/// fragments. S = 16: 128×128 in 8 warp tiles of 2×4 fragments (32×64); S = 8: 64×64 in 4
/// warp tiles of 4×4 fragments (32×32).
pub fn tile(s: u32) -> (u32, u32, u32, u32, u32) {
    if s == 16 {
        (128, 128, 32, 2, 4)
    } else {
        (64, 64, 16, 4, 4)
    }
}

/// Warp tiles per work-group.
pub fn warp_tiles(s: u32) -> u32 {
    let (bm, bn, _, wm, wn) = tile(s);
    (bm / (wm * s)) * (bn / (wn * s))
}

/// Warp tiles a subgroup may own when subgroups have at most `max_lanes` lanes (0: unknown,
/// taken as 128, Vulkan's largest).
pub fn j_for(s: u32, max_lanes: u32) -> u32 {
    let lanes = if max_lanes == 0 { 128 } else { max_lanes };
    let fewest = (invocations(s) / lanes).max(1);
    warp_tiles(s).div_ceil(fewest)
}

impl Coop {
    fn elem(self) -> &'static str {
        if self.half {
            "f16"
        } else {
            "f32"
        }
    }

    /// Workgroup memory in bytes: the A and B stages and one S×S f32 scratch per warp tile,
    /// plus the slot where subgroups without a warp tile store (see the module docs).
    pub fn workgroup_bytes(self) -> u32 {
        let (bm, bn, bk, _, _) = tile(self.s);
        let e = if self.half { 2 } else { 4 };
        (bm + bn) * bk * e + (warp_tiles(self.s) + 1) * self.s * self.s * 4
    }

    /// The entry point's name.
    pub fn entry(self) -> String {
        format!(
            "matmul_coop{}{}_j{}_forward",
            self.s,
            if self.half { "h" } else { "f" },
            self.j
        )
    }

    fn suffix(self) -> String {
        format!("{}{}", self.s, if self.half { "h" } else { "f" })
    }

    /// The enable directives the module must open with.
    pub fn enables(self) -> &'static str {
        if self.half {
            "enable f16;\nenable wgpu_cooperative_matrix;\n"
        } else {
            "enable wgpu_cooperative_matrix;\n"
        }
    }

    /// The workgroup buffers (declared at module scope, before the kernel).
    pub fn storage(self) -> String {
        let (bm, bn, bk, _, _) = tile(self.s);
        let (e, x) = (self.elem(), self.suffix());
        format!(
            "var<workgroup> csa_{x}: array<{e}, {}>; // [row][k]\n\
             var<workgroup> csb_{x}: array<{e}, {}>; // [k][col]\n\
             var<workgroup> csc_{x}: array<f32, {}>; // [warp tile][row][col]\n",
            bm * bk,
            bk * bn,
            (warp_tiles(self.s) + 1) * self.s * self.s
        )
    }

    /// The kernel's WGSL (matmul only: see the module docs).
    pub fn text(self) -> String {
        let s = self.s;
        let (bm, bn, bk, wm, wn) = tile(s);
        let w = invocations(s);
        let t = warp_tiles(s);
        let tc = bn / (wn * s); // warp tiles per row of warp tiles
        let (e, x) = (self.elem(), self.suffix());
        let (sa, sb, sc) = (format!("csa_{x}"), format!("csb_{x}"), format!("csc_{x}"));
        let name = self.entry();
        let mut l: Vec<String> = Vec::new();
        l.push(format!(
            "
@compute @workgroup_size({w})
fn {name}(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
    @builtin(subgroup_id) sgid: u32,
    @builtin(num_subgroups) nsg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) lanes: u32,
) {{
    let row0 = wid.y * {bm}u;
    let col0 = wid.x * {bn}u;
    let klast = p.k - 1u;
    let mlast = p.m - 1u;
    let nlast = p.n - 1u;
    let aks = select(1u, p.m, TRANS_A);
    let ams = select(p.k, 1u, TRANS_A);
    let bks = select(p.n, 1u, TRANS_B);
    let bns = select(1u, p.k, TRANS_B);
    let tiles = (p.k + {}u) / {bk}u;
    var bsum = 0.0;",
            bk - 1
        ));
        for j in 0..self.j {
            l.push(format!("    let own{j} = sgid + {j}u * nsg < {t}u;"));
            l.push(format!(
                "    let wt{j} = min(sgid + {j}u * nsg, {}u);",
                t - 1
            ));
            l.push(format!(
                "    let slot{j} = select({t}u, wt{j}, own{j}) * {}u;",
                s * s
            ));
            l.push(format!("    let wr{j} = (wt{j} / {tc}u) * {}u;", wm * s));
            l.push(format!("    let wc{j} = (wt{j} % {tc}u) * {}u;", wn * s));
            for r in 0..wm {
                for c in 0..wn {
                    l.push(format!(
                        "    var acc{j}_{r}_{c} = coop_mat{s}x{s}<f32, C>();"
                    ));
                }
            }
        }
        l.push("    for (var t = 0u; t < tiles; t++) {".into());
        l.push(format!("        let k0 = t * {bk}u;"));
        // The stage: each invocation converts its share of A and B as it stores it.
        for r in 0..(bm * bk / w) {
            l.push(format!("        {{ let e = li + {}u;", w * r));
            l.push(format!(
                "          let rr = select(e / {bk}u, e % {bm}u, TRANS_A);"
            ));
            l.push(format!(
                "          let kk = select(e % {bk}u, e / {bm}u, TRANS_A);"
            ));
            l.push("          let ok = row0 + rr < p.m && k0 + kk < p.k;".into());
            l.push(format!(
                "          {sa}[rr * {bk}u + kk] = {e}(select(0.0, a[min(row0 + rr, mlast) * ams + min(k0 + kk, klast) * aks], ok)); }}"
            ));
        }
        for r in 0..(bk * bn / w) {
            l.push(format!("        {{ let e = li + {}u;", w * r));
            l.push(format!(
                "          let kk = select(e / {bn}u, e % {bk}u, TRANS_B);"
            ));
            l.push(format!(
                "          let cc = select(e % {bn}u, e / {bk}u, TRANS_B);"
            ));
            l.push("          let ok = k0 + kk < p.k && col0 + cc < p.n;".into());
            l.push(format!(
                "          {sb}[kk * {bn}u + cc] = {e}(select(0.0, b[min(k0 + kk, klast) * bks + min(col0 + cc, nlast) * bns], ok)); }}"
            ));
        }
        l.push(format!(
            "        if (EPI == 2u && wid.y == 0u && li < {bn}u && col0 + li < p.n) {{"
        ));
        l.push(format!(
            "            for (var kk = k0; kk < min(k0 + {bk}u, p.k); kk++) {{"
        ));
        l.push("                bsum += b[kk * bks + (col0 + li) * bns];".into());
        l.push("            }".into());
        l.push("        }".into());
        l.push("        workgroupBarrier();".into());
        for j in 0..self.j {
            l.push("        {".into());
            for ks in 0..(bk / s) {
                for r in 0..wm {
                    l.push(format!(
                        "            let a{ks}_{r} = coopLoadT<coop_mat{s}x{s}<{e}, A>>(&{sa}[(wr{j} + {}u) * {bk}u + {}u], {bk}u);",
                        r * s,
                        ks * s
                    ));
                }
                for c in 0..wn {
                    l.push(format!(
                        "            let b{ks}_{c} = coopLoadT<coop_mat{s}x{s}<{e}, B>>(&{sb}[{}u + wc{j} + {}u], {bn}u);",
                        ks * s * bn,
                        c * s
                    ));
                }
                for r in 0..wm {
                    for c in 0..wn {
                        l.push(format!(
                            "            acc{j}_{r}_{c} = coopMultiplyAdd(a{ks}_{r}, b{ks}_{c}, acc{j}_{r}_{c});"
                        ));
                    }
                }
            }
            l.push("        }".into());
        }
        l.push("        workgroupBarrier();".into());
        l.push("    }".into());
        l.push(format!(
            "    if (EPI == 2u && wid.y == 0u && li < {bn}u && col0 + li < p.n) {{ {}col0 + li, bsum); }}",
            csum(false)
        ));
        // The epilogue, a fragment at a time through the owner's scratch slot.
        let ss = s * s;
        for j in 0..self.j {
            for r in 0..wm {
                for c in 0..wn {
                    l.push(format!(
                        "    coopStoreT(acc{j}_{r}_{c}, &{sc}[slot{j}], {s}u);"
                    ));
                    l.push("    workgroupBarrier();".into());
                    l.push(format!("    if (own{j}) {{"));
                    l.push(format!(
                        "        for (var q = lane; q < {ss}u; q += lanes) {{"
                    ));
                    l.push(format!(
                        "            store_c(row0 + wr{j} + {}u + q / {s}u, col0 + wc{j} + {}u + q % {s}u, {sc}[slot{j} + q]);",
                        r * s,
                        c * s
                    ));
                    l.push("        }".into());
                    l.push("    }".into());
                    l.push("    workgroupBarrier();".into());
                }
            }
        }
        l.push("}".into());
        l.join("\n") + "\n"
    }
}
