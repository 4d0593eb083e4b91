"""suanli.numpy beside NumPy on this machine: the ten-operation expression of
``benches/arrays.rs`` over 16M float32 values (NumPy makes a temporary per operation; suanli
fuses the ten into one kernel), a full sum, an FFT of 2^20 complex64 points, ``solve`` of
1024² (NumPy in float32 through LAPACK), and the host time per operation on a tiny array.
The two alternate within each round; medians and ratios::

    python bindings/python/bench/arrays_vs_numpy.py [--n 16777216] [--rounds 5]
"""

import argparse
import statistics
import time

import numpy as np

import suanli
import suanli.numpy as xp


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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=1 << 24)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    dev = suanli.current_device()
    host = np.linspace(-2, 2, args.n, dtype=np.float32)
    x = xp.asarray(host)
    ten(xp, x).get()  # compile
    rows = {"numpy ten ops": [], "suanli ten ops (fused)": [], "numpy sum": [], "suanli sum": []}
    for _ in range(args.rounds):
        t = time.perf_counter()
        ref = ten(np, host)
        rows["numpy ten ops"].append(time.perf_counter() - t)
        dev.synchronize()
        t = time.perf_counter()
        y = ten(xp, x)
        y._a.eval()
        dev.synchronize()
        rows["suanli ten ops (fused)"].append(time.perf_counter() - t)
        t = time.perf_counter()
        host.sum()
        rows["numpy sum"].append(time.perf_counter() - t)
        t = time.perf_counter()
        xp.sum(x)._a.eval()
        dev.synchronize()
        rows["suanli sum"].append(time.perf_counter() - t)
    err = float(np.max(np.abs(y.get() - ref)))
    print(f"device: {dev.name}; {args.n} float32 values; max |suanli - numpy| = {err:.2e}")
    med = {k: statistics.median(v) for k, v in rows.items()}
    for k, v in med.items():
        print(f"{k:<28} {v * 1e3:10.2f} ms")
    print(f"{'ten ops: numpy / suanli':<28} {med['numpy ten ops'] / med['suanli ten ops (fused)']:10.2f} x")
    print(f"{'sum: numpy / suanli':<28} {med['numpy sum'] / med['suanli sum']:10.2f} x")

    # FFT of 2^20 complex64 points and solve of 1024² with one column, alternating.
    rng = np.random.default_rng(0)
    sig_np = rng.random(1 << 20, dtype=np.float32).astype(np.complex64)
    sig = xp.asarray(sig_np)
    n = 1024
    a_np = (np.eye(n) + (rng.random((n, n)) - 0.5) / n ** 0.5).astype(np.float32)
    b_np = rng.random((n, 1), dtype=np.float32)
    a, b = xp.asarray(a_np), xp.asarray(b_np)
    xp.fft.fft(sig)._a.eval()
    xp.linalg.solve(a, b)._a.eval()
    more = {"numpy fft 2^20": [], "suanli fft 2^20": [], "numpy solve 1024": [], "suanli solve 1024": []}
    for _ in range(max(1, args.rounds // 2)):
        t = time.perf_counter()
        np.fft.fft(sig_np)
        more["numpy fft 2^20"].append(time.perf_counter() - t)
        dev.synchronize()
        t = time.perf_counter()
        xp.fft.fft(sig)._a.eval()
        dev.synchronize()
        more["suanli fft 2^20"].append(time.perf_counter() - t)
        t = time.perf_counter()
        np.linalg.solve(a_np, b_np)
        more["numpy solve 1024"].append(time.perf_counter() - t)
        t = time.perf_counter()
        xp.linalg.solve(a, b)._a.eval()
        dev.synchronize()
        more["suanli solve 1024"].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in more.items()}
    for k, v in med.items():
        print(f"{k:<28} {v * 1e3:10.2f} ms")
    print(f"{'fft: numpy / suanli':<28} {med['numpy fft 2^20'] / med['suanli fft 2^20']:10.2f} x")
    print(f"{'solve: numpy / suanli':<28} {med['numpy solve 1024'] / med['suanli solve 1024']:10.2f} x")

    small_np = np.ones(8, np.float32)
    small = xp.asarray(small_np)
    reps = 20000
    t = time.perf_counter()
    for _ in range(reps):
        small_np + 1.0
    t_np = (time.perf_counter() - t) / reps
    t = time.perf_counter()
    for _ in range(reps):
        small + 1.0
    t_q = (time.perf_counter() - t) / reps
    runs = 500
    t = time.perf_counter()
    for _ in range(runs):
        (small + 1.0)._a.eval()
        dev.synchronize()
    t_run = (time.perf_counter() - t) / runs
    print(f"{'µs per op, numpy (8 values)':<36} {t_np * 1e6:8.2f}")
    print(f"{'µs per op, suanli queued':<36} {t_q * 1e6:8.2f}")
    print(f"{'µs per op, suanli run and waited':<36} {t_run * 1e6:8.2f}")


if __name__ == "__main__":
    main()
