#!/usr/bin/env python3
"""torch.matmul in FP32 on CUDA (TF32 off), the same square sizes as `cargo bench --bench
matmul`, for scripts/gpu_bench.sh to print side by side. Median of 5 timed runs after a
warm-up, CUDA events; prints `size GFLOP/s` lines. With --half, float16 operands (cuBLAS on
the tensor cores, f32 accumulation): the reference of suanli's `coop16h` kernel.

    python3 benches/torch_matmul.py --sizes 512,1024,2048,4096,8192 [--half]
"""
import argparse, statistics

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="512,1024,2048,4096,8192")
    ap.add_argument("--half", action="store_true", help="float16 operands (tensor cores)")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    for s in [int(v) for v in a.sizes.split(",")]:
        dtype = torch.float16 if a.half else torch.float32
        x = torch.rand(s, s, device="cuda", dtype=dtype)
        y = torch.rand(s, s, device="cuda", dtype=dtype)
        torch.matmul(x, y)
        torch.cuda.synchronize()
        times = []
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.matmul(x, y)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        t = statistics.median(times)
        tag = "torch-f16" if a.half else "torch"
        print(f"{tag} {s} {2 * s ** 3 / t / 1e9:.1f}", flush=True)


if __name__ == "__main__":
    main()
