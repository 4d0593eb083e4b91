"""The PyTorch reference for `cargo run --release --example shakespeare_gpt`: nanoGPT's
character-level GPT on Tiny Shakespeare with the same recipe (nanoGPT's model.py, condensed:
pre-norm blocks, causal self-attention, GELU MLP, LayerNorm and Linear without biases, the
output projection tied to the token embedding; AdamW with weight decay on matrices, linear
warm-up and cosine decay, global gradient clipping 1.0).

    python benches/torch_gpt.py --iters 2000 --threads 2

Prints, every --eval-interval iterations, the mean training loss of those iterations, the
validation loss on --eval-batches fixed random windows and the time per iteration, as the
Rust example does, so the two can be read side by side.
"""

import argparse
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, e, heads, dropout=0.0):
        super().__init__()
        self.heads = heads
        self.drop = nn.Dropout(dropout)
        self.p = dropout
        self.ln1 = nn.LayerNorm(e, bias=False)
        self.c_attn = nn.Linear(e, 3 * e, bias=False)
        self.c_proj = nn.Linear(e, e, bias=False)
        self.ln2 = nn.LayerNorm(e, bias=False)
        self.c_fc = nn.Linear(e, 4 * e, bias=False)
        self.mlp_proj = nn.Linear(4 * e, e, bias=False)

    def forward(self, x):
        b, t, e = x.shape
        q, k, v = self.c_attn(self.ln1(x)).split(e, dim=2)
        q, k, v = (z.view(b, t, self.heads, e // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.p if self.training else 0.0)
        x = x + self.drop(self.c_proj(y.transpose(1, 2).contiguous().view(b, t, e)))
        return x + self.drop(self.mlp_proj(F.gelu(self.c_fc(self.ln2(x)))))


class GPT(nn.Module):
    def __init__(self, vocab, block, layers, heads, e, dropout=0.0):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.wte = nn.Embedding(vocab, e)
        self.wpe = nn.Embedding(block, e)
        self.blocks = nn.ModuleList(Block(e, heads, dropout) for _ in range(layers))
        self.ln_f = nn.LayerNorm(e, bias=False)
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight") or name.endswith("mlp_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * layers))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, 0.02)

    def forward(self, idx, targets):
        t = idx.shape[1]
        x = self.drop(self.wte(idx) + self.wpe(torch.arange(t, device=idx.device)))
        for blk in self.blocks:
            x = blk(x)
        logits = self.ln_f(x) @ self.wte.weight.T
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--eval-interval", type=int, default=250)
    ap.add_argument("--eval-batches", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=12)
    ap.add_argument("--block", type=int, default=64)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--preset", choices=["nanogpt"], help="6 layers, 6 heads, width 384, block 256, batch 64, dropout 0.2, 5000 iterations")
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "data", "tinyshakespeare", "input.txt"))
    a = ap.parse_args()
    if a.preset == "nanogpt":
        a.layers, a.heads, a.width, a.block, a.batch_size = 6, 6, 384, 256, 64
        a.dropout, a.iters, a.eval_interval = 0.2, 5000, 500
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    text = open(a.data, encoding="utf-8").read()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    ids = torch.tensor([index[c] for c in text], dtype=torch.long)
    n = len(ids) * 9 // 10
    train, val = ids[:n], ids[n:]

    def batch(data, count, gen):
        ix = torch.randint(len(data) - a.block - 1, (count,), generator=gen)
        x = torch.stack([data[i:i + a.block] for i in ix])
        y = torch.stack([data[i + 1:i + 1 + a.block] for i in ix])
        return x.to(a.device), y.to(a.device)

    model = GPT(len(chars), a.block, a.layers, a.heads, a.width, a.dropout).to(a.device)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, 0.99))
    where = f"the CPU ({a.threads} threads)" if a.device == "cpu" else a.device
    print(f"GPT ({a.layers} layers, {a.heads} heads, width {a.width}, block {a.block}) on {where}: "
          f"{sum(p.numel() for p in model.parameters())} parameters")

    def lr_at(it):
        warmup, decay_iters, lo = 100, max(a.iters, 101), a.lr / 10
        if it < warmup:
            return a.lr * (it + 1) / (warmup + 1)
        if it > decay_iters:
            return lo
        return lo + 0.5 * (1 + math.cos(math.pi * (it - warmup) / (decay_iters - warmup))) * (a.lr - lo)

    vgen = torch.Generator().manual_seed(a.seed ^ 0x5EED)
    val_batches = [batch(val, a.batch_size, vgen) for _ in range(a.eval_batches)]
    gen = torch.Generator().manual_seed(a.seed)
    done = 0
    while done < a.iters:
        steps = min(a.eval_interval, a.iters - done)
        losses = []
        t0 = time.perf_counter()
        model.train()
        for it in range(done, done + steps):
            for g in opt.param_groups:
                g["lr"] = lr_at(it)
            x, y = batch(train, a.batch_size, gen)
            loss = model(x, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(loss.item())
        secs = time.perf_counter() - t0
        done += steps
        model.eval()
        with torch.no_grad():
            v = sum(model(x, y).item() for x, y in val_batches) / len(val_batches)
        print(f"iter {done:>5}: train loss {sum(losses) / len(losses):.4f}, val loss {v:.4f}, "
              f"{steps * a.batch_size * a.block / secs:.0f} tokens/s, {secs * 1e3 / steps:.1f} ms/iter", flush=True)


if __name__ == "__main__":
    main()
