"""Keras-style progress output of fit and evaluate (printed here, in Python: the Rust
library prints nothing itself)."""

from __future__ import annotations

import sys
import time
from typing import Dict, Optional, Sequence


def metrics_text(logs: Dict[str, float]) -> str:
    """`` - loss: ... - <metrics> - val_loss: ... - val_<metrics>`` as Keras orders them."""
    train = [k for k in logs if not k.startswith("val_")]
    val = [k for k in logs if k.startswith("val_")]
    keys = sorted(train, key=lambda k: k != "loss") + sorted(val, key=lambda k: k != "val_loss")
    return "".join(f" - {k}: {logs[k]:.4f}" for k in keys)


def _bar(step: int, steps: int, width: int = 30) -> str:
    if steps <= 0:
        return "[" + "=" * width + "]"
    done = int(width * step / steps)
    if done >= width:
        return "[" + "=" * width + "]"
    return "[" + "=" * done + ">" + "." * (width - done - 1) + "]"


class Printer:
    """verbose=1: a live bar on a terminal and a line per epoch; verbose=2: a line per
    epoch; verbose=0: nothing."""

    def __init__(self, verbose: int, stream=None) -> None:
        self.verbose = verbose
        self.stream = stream if stream is not None else sys.stdout
        try:
            self.live = verbose == 1 and self.stream.isatty()
        except (AttributeError, ValueError):
            self.live = False
        self.t0 = time.perf_counter()
        self.last = 0.0

    def epoch_begin(self, epoch: int, epochs: int, steps: int, first: bool) -> None:
        if self.verbose:
            self.stream.write(f"Epoch {epoch + 1}/{epochs}\n")
            self.stream.flush()
        self.t0 = time.perf_counter()

    def progress(self, epoch: int, step: int, steps: int, loss: float, accuracy: Optional[float], names: Sequence[str]) -> None:
        if not self.live:
            return
        now = time.perf_counter()
        if now - self.last < 0.1 and step < steps:
            return
        self.last = now
        elapsed = now - self.t0
        eta = elapsed / step * (steps - step) if step else 0.0
        logs = {"loss": loss}
        if accuracy is not None:
            for n in names:
                logs[n] = accuracy
        self.stream.write(f"\r{step}/{steps} {_bar(step, steps)} - ETA: {eta:.0f}s{metrics_text(logs)}")
        self.stream.flush()

    def epoch_end(self, steps: int, seconds: float, logs: Dict[str, float]) -> None:
        if not self.verbose:
            return
        prefix = "\r" if self.live else ""
        # The loss scale goes to History, not to the progress line (Keras prints none).
        shown = {k: v for k, v in logs.items() if k != "loss_scale"}
        self.stream.write(prefix + summary_line(self.verbose, steps, seconds, shown) + "\n")
        self.stream.flush()


def _duration(seconds: float) -> str:
    return f"{seconds:.0f}s" if seconds >= 1 else f"{seconds * 1e3:.0f}ms"


def summary_line(verbose: int, steps: int, seconds: float, logs: Dict[str, float]) -> str:
    """The line Keras prints when an epoch (or an evaluation) ends: with the bar at
    ``verbose=1`` (``1875/1875 [====] - 3s 2ms/step - loss: ...``), without it at
    ``verbose=2`` (``313/313 - 0s - loss: 0.0730 - accuracy: 0.9778 - 417ms/epoch - 1ms/step``)."""
    per_step = seconds / max(steps, 1)
    unit = f"{per_step * 1e3:.0f}ms/step" if per_step >= 1e-3 else f"{per_step * 1e6:.0f}us/step"
    if verbose == 2:
        return f"{steps}/{steps} - {seconds:.0f}s{metrics_text(logs)} - {_duration(seconds)}/epoch - {unit}"
    return f"{steps}/{steps} {_bar(steps, steps)} - {seconds:.0f}s {unit}{metrics_text(logs)}"
