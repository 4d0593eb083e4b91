"""A Keras-compatible API over suanli's training engine: ``Sequential``, ``layers``,
``optimizers``, ``losses``, ``callbacks``, ``models.load_model`` and ``datasets.mnist``.

Programs written for ``tf.keras`` run with ``import suanli as tf``; see the README's
"Python" section for what is supported and what differs.
"""

from . import callbacks, datasets, functional, layers, losses, metrics, mixed_precision, models, optimizers, utils
from .models import Sequential, load_model
from .layers import Input
from .functional import Model

__all__ = [
    "Input",
    "Model",
    "Sequential",
    "callbacks",
    "datasets",
    "layers",
    "load_model",
    "losses",
    "metrics",
    "mixed_precision",
    "models",
    "optimizers",
    "utils",
]
