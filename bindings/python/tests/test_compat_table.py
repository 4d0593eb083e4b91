"""The compatibility table of docs/PYTHON.md is true: every name it calls full, partial or
suanli's exists, every name it calls missing does not, every name it calls refused exists and
raises NotImplementedError when used, and every public name of the package (each module's
__all__, and Sequential's public methods) is in it."""

import re

import suanli
from suanli import keras

from conftest import REPO

MODULES = {
    "tf": suanli,
    "tf.keras": keras,
    "tf.keras.layers": keras.layers,
    "tf.keras.losses": keras.losses,
    "tf.keras.metrics": keras.metrics,
    "tf.keras.mixed_precision": keras.mixed_precision,
    "tf.keras.callbacks": keras.callbacks,
    "tf.keras.optimizers": keras.optimizers,
    "tf.keras.optimizers.schedules": keras.optimizers.schedules,
    "tf.keras.datasets": keras.datasets,
    "tf.keras.utils": keras.utils,
    "tf.keras.models": keras.models,
    "tf.nn": suanli.nn,
    "tf.math": suanli.math,
    "tf.test": suanli.test,
}


def table():
    text = (REPO / "docs" / "PYTHON.md").read_text()
    section = text.split("## Compatibility table", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"^\| `([^`]+)` \| (\w+) \|", line)
        if m:
            assert m.group(1) not in rows, f"{m.group(1)} is in the table twice"
            rows[m.group(1)] = m.group(2)
    return rows


def resolve(name):
    obj = suanli
    for part in name.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def test_the_table_says_what_exists():
    rows = table()
    assert len(rows) > 100
    for name, status in rows.items():
        assert name.startswith("tf."), name
        assert status in ("full", "partial", "missing", "refused", "suanli"), (name, status)
        try:
            resolve(name)
            exists = True
        except AttributeError:
            exists = False
        if status == "refused":
            obj = resolve(name)
            use = (lambda: obj.Dataset) if isinstance(obj, type(suanli)) else obj
            try:
                use()
            except NotImplementedError as e:
                assert "instead" in str(e) or ";" in str(e), f"{name}: {e} names no alternative"
            else:
                raise AssertionError(f"{name} is called refused but using it raised nothing")
            continue
        if status == "missing":
            assert not exists, f"{name} exists now: update its row in docs/PYTHON.md"
        else:
            assert exists, f"{name} is called {status} in docs/PYTHON.md but does not exist"


def test_every_public_name_is_in_the_table():
    rows = table()
    absent = []
    for prefix, module in MODULES.items():
        assert hasattr(module, "__all__"), f"{module.__name__} has no __all__"
        absent += [f"{prefix}.{n}" for n in module.__all__ if f"{prefix}.{n}" not in rows]
    for attr in dir(keras.Sequential):
        if not attr.startswith("_") and f"tf.keras.Sequential.{attr}" not in rows:
            absent.append(f"tf.keras.Sequential.{attr}")
    assert not absent, f"public names missing from the compatibility table: {absent}"
