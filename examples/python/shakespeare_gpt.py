#!/usr/bin/env python3
"""A character-level GPT on Tiny Shakespeare in Keras's functional API, the model of
examples/shakespeare_gpt.rs (nanoGPT's CPU recipe): token and position embeddings,
pre-norm blocks of causal self-attention and a GELU MLP with residual adds, a final layer
norm, and the output projection tied to the token embedding (suanli's `Dense(tied_to=...)`;
Keras has no such argument, KerasHub's ReversibleEmbedding is its nearest). AdamW with
weight decay on matrices, warm-up and cosine decay, global gradient clipping 1.0.

    python3 examples/python/shakespeare_gpt.py                    # 2000 iterations
    python3 examples/python/shakespeare_gpt.py --iters 100 --eval-interval 50 --sample 200

Every --eval-interval iterations: the mean training loss, the validation loss on fixed
random windows, and the time per iteration; then a sample streamed from ``model.generate``
(a KV cache on the device).
"""
import argparse
import os
import time

import numpy as np

import suanli as tf
from suanli import keras
from suanli.keras import layers
from suanli.text import Text

HERE = os.path.dirname(os.path.abspath(__file__))


def gpt(vocab, block, n_layers, heads, width):
    tokens = keras.Input(shape=(block,), dtype="int32", name="tokens")
    positions = keras.Input(shape=(block,), dtype="int32", name="positions")
    wte = layers.Embedding(vocab, width)
    h = layers.Add()([wte(tokens), layers.Embedding(block, width)(positions)])
    for _ in range(n_layers):
        n = layers.LayerNormalization(epsilon=1e-5, center=False)(h)
        a = layers.MultiHeadAttention(heads, width // heads, use_bias=False)(n, n, use_causal_mask=True)
        h = layers.Add()([h, a])
        n = layers.LayerNormalization(epsilon=1e-5, center=False)(h)
        m = layers.Dense(4 * width, activation="gelu", use_bias=False)(n)
        h = layers.Add()([h, layers.Dense(width, use_bias=False)(m)])
    h = layers.LayerNormalization(epsilon=1e-5, center=False)(h)
    logits = layers.Dense(vocab, use_bias=False, tied_to=wte)(h)
    return keras.Model([tokens, positions], logits, name="gpt")


def with_positions(windows):
    """(x, y) windows as the model's inputs: the ids and their positions 0..block-1."""
    x, y = windows
    return [x, np.broadcast_to(np.arange(x.shape[1], dtype=np.int32), x.shape).copy()], y


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
    ap.add_argument("--sample", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--data", default=os.path.join(HERE, "..", "..", "data", "tinyshakespeare", "input.txt"))
    a = ap.parse_args()
    keras.utils.set_random_seed(a.seed)
    text = Text.from_file(a.data)
    tok = text.tokenizer

    model = gpt(tok.vocab_size, a.block, a.layers, a.heads, a.width)
    # nanoGPT's schedule: 100 warm-up steps to 1e-3, cosine decay to 1e-4 at the last one.
    schedule = keras.optimizers.schedules.CosineDecay(1e-5, decay_steps=max(a.iters - 100, 1), alpha=0.1, warmup_target=1e-3, warmup_steps=100)
    opt = keras.optimizers.AdamW(learning_rate=schedule, weight_decay=0.1, beta_2=0.99, epsilon=1e-8, global_clipnorm=1.0)
    opt.exclude_from_weight_decay(var_names=["gamma"])  # layer norms' scales: vectors
    model.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    print(f"GPT ({a.layers} layers, {a.heads} heads, width {a.width}, block {a.block}): "
          f"vocabulary {tok.vocab_size}, {model.count_params()} parameters")
    # Random windows drawn on the host from the seeds (examples/shakespeare_gpt.rs draws its
    # windows on the device instead: Text::device_windows).
    vx, vy = with_positions(text.windows("val", a.eval_batches * a.batch_size, a.block, a.seed ^ 0x5EED))
    done = 0
    while done < a.iters:
        steps = min(a.eval_interval, a.iters - done)
        x, y = with_positions(text.windows("train", steps * a.batch_size, a.block, a.seed + done))
        t0 = time.perf_counter()
        hist = model.fit(x, y, batch_size=a.batch_size, epochs=1, shuffle=False, verbose=0)
        secs = time.perf_counter() - t0
        done += steps
        v = model.evaluate(vx, vy, batch_size=a.batch_size, verbose=0)
        print(f"iter {done:>5}: train loss {hist.history['loss'][0]:.4f}, val loss {v:.4f}, "
              f"{steps * a.batch_size * a.block / secs:.0f} tokens/s, {secs * 1e3 / steps:.1f} ms/iter", flush=True)
    if a.sample:
        # Drawn on the device one character at a time, the keys and values of earlier
        # positions cached there; printed as they come.
        print("---")
        model.generate(tok.encode("\n"), max_new_tokens=a.sample, temperature=0.8, top_k=40, seed=a.seed,
                       callback=lambda i: print(tok.decode([i]), end="", flush=True))
        print("\n---")

if __name__ == "__main__":
    main()
