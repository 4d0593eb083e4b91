"""Every Python code block of README.md and docs/*.md runs as written (each in a fresh
interpreter, in a scratch directory), so the documentation cannot drift from the package."""

import pathlib
import re
import subprocess
import sys

import pytest

from conftest import REPO

BLOCK = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def blocks():
    out = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for i, code in enumerate(BLOCK.findall(doc.read_text())):
            out.append(pytest.param(code, id=f"{doc.name}-{i}"))
    return out


def test_there_are_blocks_to_run():
    assert len(blocks()) >= 2


@pytest.mark.parametrize("code", blocks())
def test_the_block_runs_as_written(code, tmp_path):
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"{code}\n--- stdout\n{r.stdout[-2000:]}\n--- stderr\n{r.stderr[-4000:]}"
