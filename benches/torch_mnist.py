#!/usr/bin/env python3
"""The mnist_mlp model in PyTorch, for `mnist_mlp --bench` (CPU) and scripts/gpu_bench.sh
(`--device cuda`) to compare against.

784-128-64-10, ReLU, Adam(lr 1e-3, eps 1e-7 as Keras), sparse categorical cross-entropy,
shuffled batches; data read from data/mnist/*.gz (or MNIST_DIR), preloaded as float tensors.
Prints one line per epoch and finally `median_epoch_s SECONDS test_accuracy ACC`.

    python3 benches/torch_mnist.py --epochs 3 --batch-size 32 --threads 2
    python3 benches/torch_mnist.py --epochs 3 --batch-size 32 --device cuda
"""
import argparse, gzip, os, statistics, time

import torch


def idx(path):
    with gzip.open(path) as f:
        b = f.read()
    nd = b[3]
    dims = [int.from_bytes(b[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    return torch.frombuffer(bytearray(b[4 + 4 * nd:]), dtype=torch.uint8).reshape(dims)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    dev = torch.device(a.device)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    d = os.environ.get("MNIST_DIR", os.path.join(os.path.dirname(__file__), "..", "data", "mnist"))
    x = idx(os.path.join(d, "train-images-idx3-ubyte.gz")).reshape(-1, 784).float() / 255
    y = idx(os.path.join(d, "train-labels-idx1-ubyte.gz")).long()
    xt = idx(os.path.join(d, "t10k-images-idx3-ubyte.gz")).reshape(-1, 784).float() / 255
    yt = idx(os.path.join(d, "t10k-labels-idx1-ubyte.gz")).long()
    x, y, xt, yt = x.to(dev), y.to(dev), xt.to(dev), yt.to(dev)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 128), torch.nn.ReLU(),
        torch.nn.Linear(128, 64), torch.nn.ReLU(),
        torch.nn.Linear(64, 10)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    loss_fn = torch.nn.CrossEntropyLoss()
    times = []
    for epoch in range(a.epochs):
        t0 = time.perf_counter()
        perm = torch.randperm(x.shape[0], device=dev)
        for i in range(0, x.shape[0], a.batch_size):
            b = perm[i:i + a.batch_size]
            opt.zero_grad()
            loss = loss_fn(model(x[b]), y[b])
            loss.backward()
            opt.step()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        print(f"epoch {epoch + 1}: {times[-1]:.2f}s loss {loss.item():.4f}", flush=True)
    with torch.no_grad():
        acc = (model(xt).argmax(1) == yt).float().mean().item()
    med = statistics.median(times[1:] if len(times) > 1 else times)
    print(f"median_epoch_s {med:.4f} test_accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
