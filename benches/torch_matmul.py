#!/usr/bin/env python3
"""torch.matmul in FP32 on CUDA (TF32 off), the same square sizes as `cargo bench --bench
matmul`, for scripts/gpu_bench.sh to print side by side. Median of 5 timed runs after a
warm-up, CUDA events; prints `size GFLOP/s` lines.

    python3 benches/torch_matmul.py --sizes 512,1024,2048,4096,8192
"""
import argparse, statistics

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="512,1024,2048,4096,8192")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    for s in [int(v) for v in a.sizes.split(",")]:
        x = torch.rand(s, s, device="cuda")
        y = torch.rand(s, s, device="cuda")
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
        print(f"torch {s} {2 * s ** 3 / t / 1e9:.1f}", flush=True)


if __name__ == "__main__":
    main()
