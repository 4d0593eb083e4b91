"""CuPy's side of ``cargo bench --bench arrays`` (run by scripts/gpu_bench.sh where CuPy
imports): the same ten-operation expression over 16M float32 values (CuPy runs a kernel per
operation; ``cupy.fuse`` makes it one), a full sum, matmul of 1024² and a sort of 2^24 keys.
Medians of rounds, synchronised::

    python3 benches/cupy_arrays.py [--tiny]
"""

import argparse
import statistics
import time

import cupy as cp


def ten(m, x):
    a = x * 1.5
    a = a + 0.25
    a = m.tanh(a)
    a = a * x
    a = a - 0.5
    a = m.exp(a)
    a = m.sqrt(a)
    a = m.maximum(a, 0.5)
    a = a / 3.0
    return m.log1p(a)


def timed(f, rounds):
    out = []
    for _ in range(rounds):
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        f()
        cp.cuda.Device().synchronize()
        out.append(time.perf_counter() - t)
    return statistics.median(out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tiny", action="store_true")
    args = p.parse_args()
    n = 1 << (20 if args.tiny else 24)
    rounds = 1 if args.tiny else 5
    x = cp.linspace(-2, 2, n, dtype=cp.float32)
    fused = cp.fuse(lambda v: ten(cp, v))
    ten(cp, x), fused(x)
    gb = 8 * n / 1e9
    t = timed(lambda: ten(cp, x), rounds)
    print(f"{'cupy, ten kernels':<44} {t * 1e3:10.2f} {10 * gb / t:10.2f}")
    t = timed(lambda: fused(x), rounds)
    print(f"{'cupy.fuse, one kernel':<44} {t * 1e3:10.2f} {gb / t:10.2f}")
    t = timed(lambda: cp.sum(x), rounds)
    print(f"{'cupy sum':<44} {t * 1e3:10.2f} {4 * n / 1e9 / t:10.2f}")
    m = 256 if args.tiny else 1024
    a = cp.linspace(-1, 1, m * m, dtype=cp.float32).reshape(m, m)
    a @ a.T
    t = timed(lambda: a @ a.T, rounds)
    print(f"{f'cupy matmul {m}x{m} (GFLOP/s)':<44} {t * 1e3:10.2f} {2 * m ** 3 / 1e9 / t:10.1f}")
    ns = 1 << (16 if args.tiny else 24)
    keys = cp.random.default_rng(1).random(ns, dtype=cp.float32)
    cp.sort(keys)
    t = timed(lambda: cp.sort(keys), min(rounds, 3))
    print(f"{f'cupy sort {ns} float32 keys (Mkeys/s)':<44} {t * 1e3:10.2f} {ns / 1e6 / t:10.1f}")


if __name__ == "__main__":
    main()
