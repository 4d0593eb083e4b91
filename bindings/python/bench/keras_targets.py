"""Issue 21's two speed targets, side by side on MNIST (784-128-64-10, Adam, batch 32):

- `from_logits=True` on a linear output against the softmax output with the usual loss
  (target: within 5% of the softmax path's epoch time);
- a per-step learning-rate schedule (`ExponentialDecay`, applied per step on the device)
  against a constant rate (target: no measurable cost per step).

Each variant runs in a fresh process, the order alternating every round; the engine's own
training seconds per epoch (`history.epoch_seconds`, validation excluded) of epochs 2..N are
kept. Prints each run's median epoch, the medians over rounds, and the ratios.

    python bindings/python/bench/keras_targets.py [--rounds 4] [--epochs 3] [--rows 60000]
"""

import argparse
import statistics
import subprocess
import sys

RUN = r"""
import sys, suanli as tf
variant, epochs, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
(x, y), _ = tf.keras.datasets.mnist.load_data()
x, y = x[:rows].reshape(-1, 784) / 255.0, y[:rows]
last = 'linear' if variant == 'logits' else 'softmax'
model = tf.keras.Sequential([
    tf.keras.layers.Dense(128, activation='relu', input_shape=(784,)),
    tf.keras.layers.Dense(64, activation='relu'),
    tf.keras.layers.Dense(10, activation=last),
])
lr = 1e-3
if variant == 'schedule':
    lr = tf.keras.optimizers.schedules.ExponentialDecay(1e-3, decay_steps=1000, decay_rate=0.9)
model.compile(optimizer=tf.keras.optimizers.Adam(lr),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=variant == 'logits'),
              metrics=['accuracy'])
h = model.fit(x, y, epochs=epochs, batch_size=32, verbose=0)
print("epochs", " ".join(f"{s:.4f}" for s in h.epoch_seconds), "acc", f"{h.history['accuracy'][-1]:.4f}", flush=True)
"""


def run(variant: str, epochs: int, rows: int) -> float:
    out = subprocess.run([sys.executable, "-c", RUN, variant, str(epochs), str(rows)], check=True, capture_output=True, text=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("epochs"))
    parts = line.split()
    secs = [float(s) for s in parts[1:parts.index("acc")]]
    med = statistics.median(secs[1:] or secs)
    print(f"  {variant:9} median epoch {med:.3f} s  (epochs {secs}, final accuracy {parts[-1]})", flush=True)
    return med


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--rows", type=int, default=60000)
    a = ap.parse_args()
    variants = ["softmax", "logits", "constant", "schedule"]
    times = {v: [] for v in variants}
    for r in range(a.rounds):
        print(f"round {r + 1}", flush=True)
        order = variants if r % 2 == 0 else list(reversed(variants))
        for v in order:
            # "constant" is the softmax model again: the schedule's baseline in the same round.
            times[v].append(run("softmax" if v == "constant" else v, a.epochs, a.rows))
    med = {v: statistics.median(t) for v, t in times.items()}
    print("medians over rounds: " + ", ".join(f"{v} {m:.3f} s" for v, m in med.items()))
    print(f"from_logits / softmax: {med['logits'] / med['softmax']:.3f}  (target <= 1.05)")
    print(f"schedule / constant:   {med['schedule'] / med['constant']:.3f}  (target: no measurable cost)")


if __name__ == "__main__":
    main()
