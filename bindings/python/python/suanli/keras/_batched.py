"""``fit``, ``evaluate`` and ``predict`` on batched sources (``keras.utils.PyDataset``,
generators): materialised into one device dataset when an epoch's features fit in
``utils.MATERIALISE_LIMIT_BYTES``, streamed in chunks of whole batches otherwise (see
``_data.py``). The streamed epoch loop lives here; the materialised path is the array path.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from . import _data, utils
from . import callbacks as callbacks_module
from . import optimizers as optimizers_module
from ._progress import Printer


def _steps(source: Any, steps: Optional[int]) -> int:
    if steps is not None:
        return int(steps)
    return len(source) if hasattr(source, "__len__") else 0


def fit(model: Any, x: Any, epochs: int, verbose: int, callbacks: Optional[Sequence[Any]], validation_data: Any, initial_epoch: int, validation_freq: Any, steps_per_epoch: Optional[int]) -> Any:
    limit = int(utils.MATERIALISE_LIMIT_BYTES)
    it = _data.chunks(x, steps_per_epoch, limit, "fit")
    first = next(it, None)
    if first is None:
        raise ValueError("fit: the dataset gave no batches")
    second = next(it, None)
    if first[1] is None:
        raise ValueError("fit: the batches must be (x, y) pairs")
    if second is None:
        # Materialised: one device dataset, the array path, the batches in their order.
        cx, cy, bs = first
        return model.fit(cx, cy, batch_size=bs, epochs=epochs, verbose=verbose, callbacks=callbacks, validation_data=validation_data, shuffle=False, initial_epoch=initial_epoch, validation_freq=validation_freq)
    return _stream(model, x, [first, second], it, epochs, verbose, callbacks, validation_data, initial_epoch, validation_freq, steps_per_epoch)


def _due(freq: Any, epoch: int) -> bool:
    return (epoch + 1) % freq == 0 if isinstance(freq, int) else (epoch + 1) in freq


def _stream(model: Any, x: Any, head: List[Any], rest: Any, epochs: int, verbose: int, callbacks: Optional[Sequence[Any]], validation_data: Any, initial_epoch: int, validation_freq: Any, steps_per_epoch: Optional[int]) -> Any:
    limit = int(utils.MATERIALISE_LIMIT_BYTES)
    native = model._build(tuple(head[0][0].shape[1:]))
    history = callbacks_module.History()
    cbs = list(callbacks or []) + [history]
    params = {"epochs": epochs, "steps": _steps(x, steps_per_epoch), "verbose": verbose, "initial_epoch": initial_epoch}
    for cb in cbs:
        cb.set_model(model)
        cb.set_params(params)
    snapshots = any(getattr(cb, "_needs_snapshots", False) for cb in cbs)
    tmpdir = tempfile.mkdtemp(prefix="suanli-fit-") if snapshots else None
    printer = Printer(verbose)
    opt = getattr(model, "optimizer", None)
    lr = opt._lr_at if isinstance(opt, optimizers_module.Optimizer) else None
    model.stop_training = False
    begin_cbs = [cb for cb in cbs if callbacks_module.overrides(cb, "on_train_batch_begin")]
    # Chunks run without metric reads: each epoch's last batch reports its end.
    batch_ends = callbacks_module.BatchEnds([cb for cb in cbs if callbacks_module.overrides(cb, "on_train_batch_end")])
    test_cbs = [cb for cb in cbs if any(callbacks_module.overrides(cb, h) for h in ("on_test_begin", "on_test_batch_begin", "on_test_batch_end", "on_test_end"))]
    for cb in cbs:
        cb.on_train_begin({})
    seconds: List[float] = []
    model._busy = True
    try:
        for epoch in range(initial_epoch, int(epochs)):
            printer.epoch_begin(epoch, int(epochs), params["steps"], epoch == initial_epoch)
            for cb in cbs:
                cb.on_epoch_begin(epoch, {})
            source = (c for part in (head, rest) for c in part) if epoch == initial_epoch else _data.chunks(x, steps_per_epoch, limit, "fit")
            t0 = time.perf_counter()
            sums: Optional[List[float]] = None
            nsteps = 0
            for cx, cy, bs in source:
                if cy is None:
                    raise ValueError("fit: the batches must be (x, y) pairs")
                # Each chunk is one engine run: its submissions announce their first steps.
                done = nsteps
                for cb in begin_cbs:
                    cb.on_train_batch_begin(done, {})
                on_chunk = (lambda _e, s, done=done: [cb.on_train_batch_begin(done + s, {}) for cb in begin_cbs]) if begin_cbs else None
                h = native.fit(cx, cy, epochs=1, batch_size=bs, shuffle=False, seed=utils.seed(), learning_rate=lr, on_chunk=on_chunk)
                sums = _add(sums, h["_sums"])
                nsteps += math.ceil(len(cx) / bs)
            if sums is None or sums[2] == 0:
                raise ValueError(f"fit: the dataset ran out of batches at epoch {epoch + 1} (give steps_per_epoch for a generator that goes on)")
            seconds.append(time.perf_counter() - t0)
            loss, acc, extra = native.evaluation_of(sums)
            logs: Dict[str, float] = {"loss": loss}
            if acc is not None:
                logs["accuracy"] = acc
            logs.update(extra)
            if validation_data is not None and _due(validation_freq, epoch):
                loss, acc, extra = evaluate_sums(native, validation_data, 32)
                logs["val_loss"] = loss
                if acc is not None:
                    logs["val_accuracy"] = acc
                logs.update({"val_" + k: v for k, v in extra.items()})
                if test_cbs:
                    val = model._logs({k[4:]: v for k, v in logs.items() if k.startswith("val_")})
                    callbacks_module.run_test_hooks(test_cbs, _steps(validation_data, None) if _data.is_batched(validation_data) else -(-len(validation_data[0]) // 32), val)
            logs = model._logs(logs)
            batch_ends.epoch_end(nsteps, logs)
            printer.epoch_end(nsteps, seconds[-1], logs)
            if tmpdir:
                model._snapshot = os.path.join(tmpdir, "epoch.safetensors")
                native.save(model._snapshot)
            for cb in cbs:
                cb.on_epoch_end(epoch, logs)
            if hasattr(x, "on_epoch_end"):
                x.on_epoch_end()
            if model.stop_training:
                break
        model._busy = False
        for cb in cbs:
            cb.on_train_end({})
    finally:
        model._busy = False
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
        model._snapshot = None
    history.epoch_seconds = seconds
    model.history = history
    return history


def _add(total: Optional[List[float]], sums: Sequence[float]) -> List[float]:
    """Two accumulators added slot by slot (precision and AUC combine by their sums)."""
    return list(sums) if total is None else [a + b for a, b in zip(total, sums)]


def evaluate_sums(native: Any, data: Any, batch_size: int) -> Any:
    """(loss, accuracy, metrics) over arrays ``(x, y)`` or a batched source, chunk by
    chunk: the chunks' accumulators are added up and read once."""
    if isinstance(data, (tuple, list)) and not _data.is_batched(data[0]):
        return native.evaluate(data[0], data[1], batch_size=batch_size)
    total: Optional[List[float]] = None
    for cx, cy, bs in _data.chunks(data, None, int(utils.MATERIALISE_LIMIT_BYTES), "evaluate"):
        if cy is None:
            raise ValueError("evaluate: the batches must be (x, y) pairs")
        total = _add(total, native.evaluate_sums(cx, cy, batch_size=bs))
    if total is None or total[2] == 0:
        raise ValueError("evaluate: the dataset gave no batches")
    return native.evaluation_of(total)


def predict(native: Any, x: Any, steps: Optional[int]) -> np.ndarray:
    """Predictions for every batch of a batched source, in order (``y`` ignored)."""
    outs = [native.predict(cx, batch_size=bs) for cx, _, bs in _data.chunks(x, steps, int(utils.MATERIALISE_LIMIT_BYTES), "predict")]
    if not outs:
        raise ValueError("predict: the dataset gave no batches")
    return np.concatenate(outs)
