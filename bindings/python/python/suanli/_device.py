"""Devices and the device context (``with suanli.device("gpu:0"):``)."""

from __future__ import annotations

import threading
import warnings
from typing import Iterator, List, Optional

from . import _native
from ._native import DeviceInfo

Device = _native.Device

_lock = threading.Lock()
_open: dict = {}  # spec -> Device: a device is opened once per process and shared
_local = threading.local()  # the context stack, per thread


def devices() -> List[DeviceInfo]:
    """Every adapter in selection order (after ``SUANLI_VISIBLE_DEVICES`` / suanli.toml), with
    name, kind, backend, vendor, memory (where the driver reports it) and subgroup size."""
    return _native.devices()


def is_gpu_available() -> bool:
    """True when a hardware GPU is visible; software adapters (lavapipe) do not count."""
    return _native.is_gpu_available()


def _normalise(spec: str) -> str:
    s = spec.strip().lstrip("/").lower()
    return s or "auto"


def _resolve(spec: str) -> str:
    """The spec actually opened: a GPU spec on a machine without a GPU falls back to the
    software adapter, as ``auto`` does, with a warning (TensorFlow places ``/GPU:0`` work on
    the CPU the same way when there is no GPU)."""
    s = _normalise(spec)
    if s.startswith("gpu") and not is_gpu_available():
        return "auto"
    return s


def _open_device(spec: Optional[str]) -> Device:
    """The device for ``spec`` (None: the configured default), opened once per process."""
    with _lock:
        dev = _open.get(spec)
        if dev is None:
            dev = Device(spec)
            # Two specs naming one adapter ("auto" and the default, "gpu:0" and "/GPU:0")
            # share one device: models and tensors from both can work together.
            same = next((d for d in _open.values() if d.spec == dev.spec), None)
            dev = same if same is not None else dev
            _open[spec] = dev
        return dev


class device:
    """Where models and tensors created or compiled inside the block live::

        with suanli.device("/GPU:0"):
            model.compile(...)     # the model is placed on gpu:0
            x = suanli.asarray(a)  # so is this tensor

    ``spec`` is what Rust's ``Device::open`` takes: ``auto``, ``gpu:0`` (or TensorFlow's
    ``/GPU:0``), ``cpu`` (the software adapter), ``vulkan:1``, a name fragment. On a machine
    without a GPU, a GPU spec warns (``RuntimeWarning``) and uses the software adapter; a GPU
    index that does not exist is an error. Devices open when the block is entered.
    """

    def __init__(self, spec: str = "auto", device_name: Optional[str] = None) -> None:
        spec = spec if device_name is None else device_name  # TensorFlow's argument name
        if not isinstance(spec, str):
            raise TypeError(f"device: expected a spec string such as 'gpu:0'; found {type(spec).__name__}")
        self.spec = spec
        self._device: Optional[Device] = None

    def __enter__(self) -> Device:
        resolved = _resolve(self.spec)
        dev = _open_device(resolved)
        if resolved != _normalise(self.spec):
            warnings.warn(
                f"suanli.device({self.spec!r}): no GPU found; using the software adapter "
                f"{dev.name!r} instead (as 'auto' does). suanli.devices() lists the adapters.",
                RuntimeWarning,
                stacklevel=2,
            )
        self._device = dev
        _stack().append(dev)
        return dev

    def __exit__(self, *exc) -> None:
        _stack().pop()

    def __repr__(self) -> str:
        return f"suanli.device({self.spec!r})"


def _stack() -> list:
    s = getattr(_local, "stack", None)
    if s is None:
        s = _local.stack = []
    return s


def current_device() -> Device:
    """The device of the innermost ``suanli.device`` block, else the default one
    (``SUANLI_DEVICE`` / suanli.toml, else ``auto``: the best adapter there is)."""
    s = _stack()
    if s:
        return s[-1]
    return _open_device(None)


def _in_context() -> Optional[Device]:
    s = _stack()
    return s[-1] if s else None


def _iter_open() -> Iterator[Device]:
    return iter(list(_open.values()))
