"""Shared by tools/gen_matmul_subgroup.py and tools/gen_matmul_tiled.py: turns a generated
matmul entry point into its batched and strided form (see "Batches and strides" in
shaders/matmul.wgsl).

The generators write each kernel for one dense (M, K)·(K, N) product; `batched` then
- starts the entry point with `batch_begin(z)` (work-group z is the batch index; the
  convolution twins, whose z is a K chunk, are left alone),
- reads the stored row strides from `a_ld()` / `b_ld()` (through a_ks, a_ms, b_ks, b_ns for
  the scalar loads; lda4 / ldb4 for the vec4 ones) instead of the row lengths, which the
  vec4 kernels also use as bounds (kv4, mv, nv), and
- adds the batch offsets to every load of A and B (C's stores add theirs in store_c).

Without the BATCHED override the helpers return the row lengths and zero offsets, so the
pipelines compile to the dense kernels they were.
"""

import re

STRIDES = (
    ("select(1u, p.m, TRANS_A)", "a_ks()"),
    ("select(p.k, 1u, TRANS_A)", "a_ms()"),
    ("select(p.n, 1u, TRANS_B)", "b_ks()"),
    ("select(1u, p.k, TRANS_B)", "b_ns()"),
)

# kv4 as a stride: of A's rows (NN) or of B's rows (NT), told apart by what is multiplied.
KV4_A = ("let ra", "min(row0 + rr, mlast) * kv4")


def _line(line):
    for old, new in STRIDES:
        line = line.replace(old, new)
    if "* kv4" in line:
        a_side = any(m in line for m in KV4_A)
        line = line.replace("* kv4", "* lda4" if a_side else "* ldb4")
    line = re.sub(r"\* mv\b", "* lda4", line)
    line = re.sub(r"\* nv\b", "* ldb4", line)
    line = re.sub(r"(?<![\w.])a\[", "a[a_off + ", line)
    line = re.sub(r"(?<![\w.])a4\[", "a4[a_off4 + ", line)
    line = re.sub(r"(?<![\w.])b\[", "b[b_off + ", line)
    line = re.sub(r"(?<![\w.])b4\[", "b4[b_off4 + ", line)
    return line


def batched(text, z):
    """`text`: one or more matmul entry points; `z`: the expression of the work-group's z
    (`wid.z`, or `gid.z` where the work-group is one deep)."""
    out = []
    for line in text.split("\n"):
        out.append(_line(line))
        if line.startswith(") {") or (line.startswith("fn matmul_") and line.endswith("{")):
            out.append(f"    batch_begin({z});")
        if line.strip().startswith("let kv4 = p.k / 4u;"):
            out.append("    let lda4 = a_ld() / 4u;")
            out.append("    let ldb4 = b_ld() / 4u;")
    return "\n".join(out)
