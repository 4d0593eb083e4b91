"""suanli.profiler from Python: the dispatches of a Keras training step counted and timed,
the table, and the Chrome trace."""

import json

import numpy as np
import pytest

import suanli
from suanli import keras


def test_profile_counts_a_training_step_and_writes_a_trace(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 20)).astype(np.float32)
    y = (np.arange(64) % 4).astype(np.int32)
    m = keras.Sequential([keras.Input((20,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(4)])
    m.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    m.fit(x, y, epochs=1, batch_size=32, verbose=0)  # compiled and warmed outside the block
    trace = tmp_path / "trace.json"
    with suanli.profiler.profile(trace=trace) as prof:
        m.fit(x, y, epochs=1, batch_size=32, verbose=0)
    assert prof.dispatches > 0
    names = [k["name"] for k in prof.kernels]
    assert any("matmul" in n for n in names), names
    totals = [k["total_ns"] for k in prof.kernels]
    assert totals == sorted(totals, reverse=True)
    top = prof.table(3).splitlines()
    assert any(line.lstrip().startswith("kernel") for line in top)
    assert len(top) <= 4 + 1  # the clock note, the header, three rows
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert len(events) > 0
    # Outside a block nothing is counted.
    with pytest.raises(RuntimeError):
        suanli.profiler.profile().kernels
