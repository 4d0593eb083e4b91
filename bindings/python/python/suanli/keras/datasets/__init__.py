"""Datasets as Keras returns them."""

from . import fashion_mnist, mnist

__all__ = ["fashion_mnist", "mnist"]
