"""suanli: vendor-neutral GPU compute and neural-network training on any GPU (Vulkan, Metal,
DX12, and a software adapter where there is none).

Everything computes in the Rust crate; this package is the Python face of it::

    import suanli as tf                      # the Keras API answers to the same names
    model = tf.keras.Sequential([tf.keras.layers.Dense(10, activation="softmax", input_shape=(784,))])

    import suanli
    x = suanli.asarray(numpy_array)          # a tensor on the current device
    kernel = suanli.RawKernel(wgsl_source, "main")
"""

from __future__ import annotations

from . import _native
from ._native import (  # noqa: F401  (re-exported)
    DeviceInfo,
    DeviceLostError,
    SuanliError,
    Tensor,
    __version__,
)
from ._device import Device, current_device, device, devices, is_gpu_available
from ._tensor import RawKernel, asarray, matmul, relu, softmax, sum  # noqa: A004
from ._ops import argmax, constant, convert_to_tensor, reduce_mean, reduce_sum
from . import math, nn, profiler, test, text
from . import keras
from ._refused import GradientTape, data, function

_native.init_logging()

__all__ = [
    "Device",
    "DeviceInfo",
    "DeviceLostError",
    "GradientTape",
    "RawKernel",
    "SuanliError",
    "Tensor",
    "argmax",
    "asarray",
    "constant",
    "convert_to_tensor",
    "current_device",
    "data",
    "device",
    "devices",
    "function",
    "is_gpu_available",
    "keras",
    "math",
    "matmul",
    "nn",
    "reduce_mean",
    "reduce_sum",
    "relu",
    "softmax",
    "sum",
    "test",
]
