"""CuPy's side of ``cargo bench --bench arrays`` (run by scripts/gpu_bench.sh where CuPy
imports): the same ten-operation expression over 16M float32 values (CuPy runs a kernel per
operation; ``cupy.fuse`` makes it one), a full sum, matmul of 1024², a sort of 2^24 keys,
complex64 FFTs of 2^20 and 2^24 points and ``solve`` of 4096² (cuSOLVER).
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
    for bits in (16,) if args.tiny else (20, 24):
        nf = 1 << bits
        sig = cp.random.default_rng(3).random(nf, dtype=cp.float32).astype(cp.complex64)
        cp.fft.fft(sig)
        t = timed(lambda: cp.fft.fft(sig), min(rounds, 3))
        print(f"{f'cupy fft 2^{bits} complex64 (GFLOP/s, 5n log2 n)':<44} {t * 1e3:10.2f} {5 * nf * bits / 1e9 / t:10.1f}")
    ns = 256 if args.tiny else 4096
    rng = cp.random.default_rng(4)
    a = cp.eye(ns, dtype=cp.float32) + (rng.random((ns, ns), dtype=cp.float32) - 0.5) / ns ** 0.5
    b = rng.random((ns, 1), dtype=cp.float32) * 2 - 1
    cp.linalg.solve(a, b)
    t = timed(lambda: cp.linalg.solve(a, b), min(rounds, 3))
    print(f"{f'cupy solve {ns}x{ns}, one column (GFLOP/s, 2n³/3)':<44} {t * 1e3:10.2f} {2 * ns ** 3 / 3 / 1e9 / t:10.1f}")


if __name__ == "__main__":
    main()
