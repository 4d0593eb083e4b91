"""The device's buffer pool under CuPy's names (``get_default_memory_pool()``), so code that
watches or frees CuPy's pool runs unchanged. suanli has one pool per device, shared by
arrays, tensors and models; the figures are the pool's own (``Device.memory_stats()``)."""

from __future__ import annotations

from typing import Optional

from .._device import Device, current_device


class MemoryPool:
    """A device's pool: bytes held by live buffers, bytes cached for reuse."""

    def __init__(self, device: Optional[Device] = None) -> None:
        self.device = device if device is not None else current_device()

    def used_bytes(self) -> int:
        """Bytes of buffers in use."""
        return int(self.device.memory_stats()["in_use"])

    def free_bytes(self) -> int:
        """Bytes of freed buffers the pool keeps for reuse."""
        return int(self.device.memory_stats()["cached"])

    def total_bytes(self) -> int:
        """Bytes the pool holds from the driver: in use and cached."""
        m = self.device.memory_stats()
        return int(m["in_use"]) + int(m["cached"])

    def free_all_blocks(self) -> None:
        """Returns every cached buffer to the driver."""
        self.device.empty_cache()

    def get_limit(self) -> int:
        """The pool's limit in bytes (``SUANLI_MEMORY_LIMIT`` or suanli.toml); 0 when none,
        as CuPy says."""
        limit = self.device.memory_stats()["limit"]
        return 0 if limit is None else int(limit)

    def __repr__(self) -> str:
        return f"MemoryPool({self.device.name}, used={self.used_bytes()}, free={self.free_bytes()})"


def get_default_memory_pool(device: Optional[Device] = None) -> MemoryPool:
    """The pool of ``device`` (the current device by default)."""
    return MemoryPool(device)
