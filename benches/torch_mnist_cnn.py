#!/usr/bin/env python3
"""The mnist_cnn model (keras.io's "Simple MNIST convnet") in PyTorch, for
`mnist_cnn --bench` (CPU) and scripts/gpu_bench.sh (`--device cuda`) to compare against.

Conv2D 32 3x3 relu, MaxPool 2, Conv2D 64 3x3 relu, MaxPool 2, Flatten, Dropout 0.5, Dense 10;
Adam (lr 1e-3, eps 1e-7 as Keras), sparse categorical cross-entropy, the last 10% of the
training rows held out as keras.io's validation_split=0.1 does (the epoch trains on the other
54,000); channels-last input as Keras feeds it. Data read from data/mnist/*.gz (or MNIST_DIR),
preloaded as float tensors. Prints one line per epoch and finally
`median_epoch_s SECONDS test_accuracy ACC`.

    python3 benches/torch_mnist_cnn.py --epochs 3 --batch-size 128 --threads 2
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
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--train-rows", type=int, default=0)
    a = ap.parse_args()
    dev = torch.device(a.device)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    d = os.environ.get("MNIST_DIR", os.path.join(os.path.dirname(__file__), "..", "data", "mnist"))
    x = idx(os.path.join(d, "train-images-idx3-ubyte.gz")).reshape(-1, 1, 28, 28).float() / 255
    y = idx(os.path.join(d, "train-labels-idx1-ubyte.gz")).long()
    if a.train_rows:
        x, y = x[: a.train_rows], y[: a.train_rows]
    n = x.shape[0] - x.shape[0] // 10
    x, y = x[:n], y[:n]
    xt = idx(os.path.join(d, "t10k-images-idx3-ubyte.gz")).reshape(-1, 1, 28, 28).float() / 255
    yt = idx(os.path.join(d, "t10k-labels-idx1-ubyte.gz")).long()
    x, y, xt, yt = x.to(dev), y.to(dev), xt.to(dev), yt.to(dev)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 32, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Dropout(0.5), torch.nn.Linear(1600, 10)).to(dev)
    model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    loss_fn = torch.nn.CrossEntropyLoss()
    times = []
    for epoch in range(a.epochs):
        model.train()
        t0 = time.perf_counter()
        perm = torch.randperm(x.shape[0], device=dev)
        for i in range(0, x.shape[0], a.batch_size):
            b = perm[i:i + a.batch_size]
            opt.zero_grad()
            loss = loss_fn(model(x[b].contiguous(memory_format=torch.channels_last)), y[b])
            loss.backward()
            opt.step()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        print(f"epoch {epoch + 1}: {times[-1]:.2f}s loss {loss.item():.4f}", flush=True)
    model.eval()
    with torch.no_grad():
        acc = (model(xt).argmax(1) == yt).float().mean().item()
    med = statistics.median(times[1:] if len(times) > 1 else times)
    print(f"median_epoch_s {med:.4f} test_accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
