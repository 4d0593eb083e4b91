"""Shared fixtures: the device, MNIST arrays (loaded once), the repository root."""

import os
import pathlib

import numpy as np
import pytest

import suanli

REPO = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def mnist():
    return suanli.keras.datasets.mnist.load_data()


@pytest.fixture(scope="session")
def device():
    return suanli.current_device()


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def scaled(x):
    """Pixels as Rust's Dataset::from_u8(.., 1/255) sees them: f32(k) * f32(1/255)."""
    return x.reshape(len(x), -1).astype(np.float32) * np.float32(1.0 / 255.0)
