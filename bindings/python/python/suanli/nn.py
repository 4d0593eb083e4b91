"""``tf.nn``'s activations on suanli tensors and arrays: ``softmax``, ``relu``, ``sigmoid``,
``tanh`` (computed on the device; see ``suanli._ops``)."""

from ._ops import relu, sigmoid, softmax, tanh

__all__ = ["relu", "sigmoid", "softmax", "tanh"]
