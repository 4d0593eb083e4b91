"""TensorFlow's ``tf.test`` helpers that programs use to look for a GPU."""

from __future__ import annotations

from typing import Optional, Tuple

from ._device import is_gpu_available as _any_gpu


def is_gpu_available(cuda_only: bool = False, min_cuda_compute_capability: Optional[Tuple[int, int]] = None) -> bool:
    """True when a hardware GPU is visible (any vendor: suanli needs no CUDA). The CUDA
    arguments are accepted for TensorFlow compatibility and ignored."""
    return _any_gpu()


def gpu_device_name() -> str:
    """``"/device:GPU:0"`` when a GPU is visible, else ``""`` (as TensorFlow)."""
    return "/device:GPU:0" if _any_gpu() else ""


__all__ = ["gpu_device_name", "is_gpu_available"]
