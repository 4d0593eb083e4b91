"""``tf.math``'s everyday functions on suanli tensors and arrays (see ``suanli._ops``)."""

from ._ops import argmax, reduce_mean, reduce_sum, sigmoid, softmax, tanh

__all__ = ["argmax", "reduce_mean", "reduce_sum", "sigmoid", "softmax", "tanh"]
