"""The PyTorch side of tests/gpt_parity.rs, in llm.c's manner: a small nanoGPT in float64
computes, on one batch of Tiny Shakespeare, its logits, its loss, every parameter's gradient
and ten AdamW steps with global gradient clipping, and writes them with the initial weights to
tests/fixtures/gpt_parity.safetensors. The Rust test builds the same GPT with suanli's API
(as examples/shakespeare_gpt.rs does), loads those weights and must reproduce every number
(`cargo test --release --test gpt_parity -- --nocapture` prints them side by side). The
initial weights are rounded to float32 first, so both sides start from the same values. Only
this script needs PyTorch; CI runs the Rust test on the committed fixture.

Regenerate the fixture (PyTorch and safetensors installed; a second run writes the same
tensors, only the order of the header's metadata may differ):

    python benches/gpt_parity.py            # writes tests/fixtures/gpt_parity.safetensors
    python benches/gpt_parity.py --out PATH

The model is nanoGPT's model.py (https://github.com/karpathy/nanoGPT) with bias=False and no
dropout, condensed: LayerNorm without bias, causal self-attention (c_attn, c_proj), MLP
(c_fc, exact GELU, c_proj), lm_head tied to wte, nanoGPT's initialisation (normal 0.02,
c_proj scaled by 1/sqrt(2·n_layer)) and configure_optimizers (weight decay on parameters of
two or more dimensions). One difference, on purpose: LayerNorm's epsilon is suanli's default
1e-3, as the example uses it (nanoGPT's is 1e-5; a suanli model built with
`LayerNormalization::new().epsilon(1e-5)` matches nanoGPT's exactly).

`suanli_name` below is the name and layout mapping between the two: nanoGPT's state-dict
names on the left, suanli's model-file names (`layer/weight`, as `Model::weights` names them;
the file writes `layer.weight`) on the right. `from_suanli` is its inverse, for loading a
suanli model file into nanoGPT's GPT (docs/PYTHON.md, "A suanli GPT in nanoGPT").
"""

import argparse
import math
import os

import torch
import torch.nn as nn
from torch.nn import functional as F

VOCAB_TEXT = os.path.join(os.path.dirname(__file__), "..", "data", "tinyshakespeare", "input.txt")
OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "gpt_parity.safetensors")

# The model (nanoGPT's GPTConfig fields) and the recipe (examples/shakespeare_gpt.rs's).
BLOCK, LAYERS, HEADS, WIDTH = 16, 2, 2, 32
LN_EPS = 1e-3
BATCH, STEPS, SEED = 4, 10, 1337
LR, BETAS, ADAM_EPS, WEIGHT_DECAY, CLIP = 1e-3, (0.9, 0.99), 1e-8, 0.1, 1.0


class LayerNorm(nn.Module):
    """nanoGPT's LayerNorm with bias=False (its epsilon is fixed at 1e-5; here a parameter)."""

    def __init__(self, ndim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.eps = eps

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, None, self.eps)


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=False)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=False)
        self.n_head, self.n_embd = n_head, n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        # nanoGPT's "manual implementation of attention" (its slow path; the same maths as
        # scaled_dot_product_attention, in float64 on any PyTorch).
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = att.masked_fill(~mask, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=False)
        self.gelu = nn.GELU()  # exact (erf), suanli's "gelu"
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=False)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, eps):
        super().__init__()
        self.ln_1 = LayerNorm(n_embd, eps)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = LayerNorm(n_embd, eps)
        self.mlp = MLP(n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size, n_layer, n_head, n_embd, eps):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([Block(n_embd, n_head, eps) for _ in range(n_layer)]),
            ln_f=LayerNorm(n_embd, eps),
        ))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets):
        t = idx.size(1)
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas, eps):
        """nanoGPT's: every parameter of two or more dimensions decays (embeddings and
        matrices), the LayerNorm scales do not."""
        params = [p for p in self.parameters() if p.requires_grad]
        decay = [p for p in params if p.dim() >= 2]
        nodecay = [p for p in params if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay},
                  {"params": nodecay, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=learning_rate, betas=betas, eps=eps, foreach=False)


def suanli_name(name, n_layer):
    """Where nanoGPT's parameter `name` lives in a suanli model: (suanli's `layer/weight`,
    whether the array is transposed), or None for lm_head.weight (tied: suanli's output Dense
    holds the token embedding, stored once, under the embedding).

    suanli names layers as Keras does, by class in the order the example creates them:
    embedding (wte), embedding_1 (wpe), per block i layer_normalization_{2i} (ln_1),
    multi_head_attention_{i}, layer_normalization_{2i+1} (ln_2), dense_{2i} (c_fc),
    dense_{2i+1} (mlp.c_proj), then layer_normalization_{2L} (ln_f) and dense_{2L} (the
    tied lm_head, no weight of its own); a suffix _0 is written without it. Layouts are
    Keras's: a Dense kernel is (inputs, units), PyTorch's Linear weight (units, inputs), so
    every Linear weight is transposed; MultiHeadAttention's qkv_kernel (E, 3·H·D) is c_attn's
    weight transposed (queries, keys, values one after the other, head h at columns h·D of
    each, as nanoGPT splits them), output_kernel (H·D, E) is attn.c_proj's transposed. An
    Embedding's table and a LayerNorm's scale have the same layout in both.
    """
    def n(base, i):
        return base if i == 0 else f"{base}_{i}"

    top = {
        "lm_head.weight": None,
        "transformer.wte.weight": ("embedding/embeddings", False),
        "transformer.wpe.weight": ("embedding_1/embeddings", False),
        "transformer.ln_f.weight": (f"{n('layer_normalization', 2 * n_layer)}/gamma", False),
    }
    if name in top:
        return top[name]
    parts = name.split(".")  # transformer.h.{i}.{module...}.weight
    i, rest = int(parts[2]), ".".join(parts[3:])
    layer, weight, transpose = {
        "ln_1.weight": (n("layer_normalization", 2 * i), "gamma", False),
        "attn.c_attn.weight": (n("multi_head_attention", i), "qkv_kernel", True),
        "attn.c_proj.weight": (n("multi_head_attention", i), "output_kernel", True),
        "ln_2.weight": (n("layer_normalization", 2 * i + 1), "gamma", False),
        "mlp.c_fc.weight": (n("dense", 2 * i), "kernel", True),
        "mlp.c_proj.weight": (n("dense", 2 * i + 1), "kernel", True),
    }[rest]
    return f"{layer}/{weight}", transpose


def to_suanli(named, n_layer):
    """nanoGPT's (name, tensor) pairs as suanli's {`layer/weight`: array} (see suanli_name)."""
    out = {}
    for name, t in named:
        m = suanli_name(name, n_layer)
        if m is not None:
            out[m[0]] = (t.T if m[1] else t).detach().contiguous()
    return out


def from_suanli(tensors, model):
    """The state dict of nanoGPT's GPT `model` (bias=False) from a suanli model file's
    tensors (`safetensors.torch.load_file(path)`: the file names them `layer.weight`),
    converted to the model's dtype: `model.load_state_dict(from_suanli(tensors, model))`.
    The inverse of to_suanli; lm_head.weight is wte's tensor, and buffers (nanoGPT's causal
    mask) are the model's own."""
    n_layer = len(model.transformer.h)
    sd = model.state_dict()
    for name, p in model.named_parameters():
        m = suanli_name(name, n_layer)
        if m is None:
            continue
        t = tensors[m[0].replace("/", ".", 1)].to(p.dtype)
        sd[name] = t.T.contiguous() if m[1] else t
    sd["lm_head.weight"] = sd["transformer.wte.weight"]
    return sd


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--data", default=VOCAB_TEXT)
    a = ap.parse_args()
    from safetensors.torch import save_file

    torch.manual_seed(SEED)
    text = open(a.data, encoding="utf-8").read()
    chars = sorted(set(text))  # suanli's Text: the sorted characters
    index = {c: i for i, c in enumerate(chars)}
    ids = torch.tensor([index[c] for c in text], dtype=torch.long)
    train = ids[: len(ids) * 9 // 10]
    gen = torch.Generator().manual_seed(SEED)
    ix = torch.randint(len(train) - BLOCK - 1, (BATCH,), generator=gen)
    x = torch.stack([train[i:i + BLOCK] for i in ix])
    y = torch.stack([train[i + 1:i + 1 + BLOCK] for i in ix])

    model = GPT(len(chars), BLOCK, LAYERS, HEADS, WIDTH, LN_EPS).double()
    with torch.no_grad():  # weights suanli's f32 holds exactly: both start from the same
        for p in model.parameters():
            p.copy_(p.float().double())
    out = {}

    def put(prefix, named):
        for name, t in to_suanli(named, LAYERS).items():
            out[f"{prefix}/{name}"] = t.clone()  # the optimizer steps parameters in place

    # named_parameters lists a tied tensor once (as transformer.wte.weight).
    put("init", model.named_parameters())
    logits, loss = model(x, y)
    loss.backward()
    put("grad", [(n, p.grad) for n, p in model.named_parameters()])
    out["x"], out["y"] = x.contiguous(), y.contiguous()
    out["logits"] = logits.detach().contiguous()
    out["loss"] = loss.detach().reshape(1)

    model.zero_grad(set_to_none=True)
    opt = model.configure_optimizers(WEIGHT_DECAY, LR, BETAS, ADAM_EPS)
    losses = []
    for _ in range(STEPS):
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        opt.step()
        losses.append(loss.item())
    out["losses"] = torch.tensor(losses, dtype=torch.float64)

    meta = {"vocab": str(len(chars)), "block": str(BLOCK), "layers": str(LAYERS),
            "heads": str(HEADS), "width": str(WIDTH), "ln_eps": repr(LN_EPS),
            "lr": repr(LR), "betas": repr(BETAS), "adam_eps": repr(ADAM_EPS),
            "weight_decay": repr(WEIGHT_DECAY), "clip": repr(CLIP), "seed": str(SEED),
            "torch": torch.__version__}
    save_file(out, a.out, metadata=meta)
    print(f"wrote {a.out}: {len(out)} tensors, {os.path.getsize(a.out)} bytes")
    print(f"loss {out['loss'].item():.6f}; losses over {STEPS} AdamW steps:")
    print(" ".join(f"{v:.6f}" for v in losses))


if __name__ == "__main__":
    main()
