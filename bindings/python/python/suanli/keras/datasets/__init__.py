"""Datasets as Keras returns them."""

from . import mnist

__all__ = ["mnist"]
