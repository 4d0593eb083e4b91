"""What Rust's ``--profile`` gives, from Python: every dispatch on a device counted and timed
inside a ``with`` block, the top kernels with their GFLOP/s, and a Chrome trace::

    with suanli.profiler.profile(trace="step.json") as prof:
        model.fit(x, y, epochs=1)
    print(prof.table(10))

Timing uses the adapter's timestamp queries where it has them (inside passes), else the
wall clock around each submission (the table says which)."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Union

from ._device import Device, current_device


class profile:
    """Counts and times the dispatches on ``device`` (the current one by default) while the
    block runs; writes a Chrome trace to ``trace`` (a path) when the block ends."""

    def __init__(self, device: Optional[Device] = None, trace: Union[None, str, os.PathLike] = None) -> None:
        self.device = device if device is not None else current_device()
        self.trace = trace
        self._result: Optional[Dict[str, Any]] = None

    def __enter__(self) -> "profile":
        self.device.synchronize()  # work queued before the block is not counted
        self.device.reset_profile()
        self.device.set_profiling(True)
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.device.synchronize()
            self._result = self.device.profile()
            if self.trace is not None:
                self.device.write_chrome_trace(os.fspath(self.trace))
        finally:
            self.device.set_profiling(False)

    def _done(self) -> Dict[str, Any]:
        if self._result is None:
            raise RuntimeError("profile: the results exist once the with block has ended")
        return self._result

    @property
    def kernels(self) -> List[Dict[str, Any]]:
        """Per kernel: ``name``, ``calls``, ``total_ns``, ``gflops`` and ``gbps`` (None where
        the kernel declares no work), slowest first."""
        return sorted(self._done()["kernels"], key=lambda k: -k["total_ns"])

    @property
    def dispatches(self) -> int:
        """Every dispatch counted, timed or not."""
        r = self._done()
        return sum(k["calls"] for k in r["kernels"]) + r["untimed"]

    def table(self, limit: Optional[int] = None) -> str:
        """The profiler's table (kernel, calls, total ms, mean µs, share, GFLOP/s, GB/s),
        the top ``limit`` rows."""
        lines = self._done()["table"].splitlines()
        if limit is None:
            return "\n".join(lines)
        # A header line (and the clock note, where there is one) before the rows.
        head = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("kernel")), 0) + 1
        return "\n".join(lines[: head + limit])
