"""``einsum`` as NumPy spells it, for the contractions that map to batched matrix products:
each operand's own repeated subscripts become diagonals, subscripts no other operand or the
output needs are summed out, and operands are contracted left to right, each pair as one
batched ``matmul`` (shared subscripts that stay are the batch, shared ones that go are the
inner dimension) over views and reshapes. ``...`` stands for the axes no letter names, and
broadcasts as NumPy broadcasts them."""

from __future__ import annotations

import math
import string
from typing import Any, Dict, List, Tuple

from ._array import _operand, ndarray


def _parse(subscripts: str, ndims: List[int]) -> Tuple[List[str], str]:
    """Each operand's subscripts and the output's, with ``...`` replaced by letters no
    subscript uses (aligned from the right, as broadcasting aligns axes)."""
    s = subscripts.replace(" ", "")
    explicit = "->" in s
    lhs, out = s.split("->") if explicit else (s, None)
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise ValueError(f"einsum: {len(terms)} operand subscripts for {len(ndims)} operands")
    if any(not c.isascii() or not (c.isalpha() or c in ".,->") for c in s):
        raise ValueError(f"einsum: subscripts are letters and '...', found {subscripts!r}")
    ell_rank = 0
    for t, n in zip(terms, ndims):
        if "..." in t:
            ell_rank = max(ell_rank, n - (len(t) - 3))
    # The axes `...` stands for get letters no subscript uses.
    free = [c for c in string.ascii_letters if c not in s]
    if ell_rank > len(free):
        raise ValueError(f"einsum: too many axes for '...' in {subscripts!r}")
    ell = "".join(free[:ell_rank])
    parsed = []
    for t, n in zip(terms, ndims):
        if "..." in t:
            k = n - (len(t) - 3)
            if k < 0:
                raise ValueError(f"einsum: subscripts {t!r} name more axes than the operand's {n}")
            t = t.replace("...", ell[ell_rank - k:])
        if "." in t or not t.isalpha() and t:
            raise ValueError(f"einsum: subscripts are letters and '...', found {subscripts!r}")
        if len(t) != n:
            raise ValueError(f"einsum: subscripts {t!r} for an operand with {n} axes")
        parsed.append(t)
    if out is None:
        counts: Dict[str, int] = {}
        for t in parsed:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
        if len(set(out)) != len(out) or any(c not in "".join(parsed) for c in out):
            raise ValueError(f"einsum: output subscripts {out!r} must be distinct letters of the inputs")
    return parsed, out


def _diagonals(x: ndarray, t: str) -> Tuple[ndarray, str]:
    """Repeated subscripts of one operand (``ii``) taken as diagonals."""
    from . import linalg, moveaxis

    while True:
        dup = next((c for c in t if t.count(c) > 1), None)
        if dup is None:
            return x, t
        i = t.index(dup)
        j = t.index(dup, i + 1)
        if x.shape[i] != x.shape[j]:
            raise ValueError(f"einsum: subscript {dup!r} names axes of sizes {x.shape[i]} and {x.shape[j]}")
        x = linalg.diagonal(moveaxis(x, (i, j), (-2, -1)))
        t = "".join(c for k, c in enumerate(t) if k not in (i, j)) + dup


def _sum_out(x: ndarray, t: str, keep: str) -> Tuple[ndarray, str]:
    from . import sum as xsum

    axes = tuple(k for k, c in enumerate(t) if c not in keep)
    if not axes:
        return x, t
    return xsum(x, axis=axes), "".join(c for c in t if c in keep)


def _arrange(x: ndarray, t: str, order: str, sizes: Dict[str, int]) -> ndarray:
    """``x`` (subscripts ``t``) with its axes in ``order`` (letters of ``t``), broadcast to
    ``sizes`` where it has extent 1."""
    from . import broadcast_to, permute_dims

    x = permute_dims(x, tuple(t.index(c) for c in order))
    want = tuple(sizes[c] for c in order)
    return x if x.shape == want else broadcast_to(x, want)


def _pair(a: ndarray, ta: str, b: ndarray, tb: str, keep: str, sizes: Dict[str, int]) -> Tuple[ndarray, str]:
    """One contraction: a batched matmul over the shared subscripts."""
    from . import matmul, reshape

    batch = "".join(c for c in ta if c in tb and c in keep)
    inner = "".join(c for c in ta if c in tb and c not in keep)
    left = "".join(c for c in ta if c not in tb)
    right = "".join(c for c in tb if c not in ta)
    nb = [sizes[c] for c in batch]
    nl, nk, nr = (math.prod(sizes[c] for c in s) for s in (left, inner, right))
    a2 = reshape(_arrange(a, ta, batch + left + inner, sizes), (*nb, nl, nk))
    b2 = reshape(_arrange(b, tb, batch + inner + right, sizes), (*nb, nk, nr))
    out = matmul(a2, b2)
    return reshape(out, (*nb, *(sizes[c] for c in left + right))), batch + left + right


def einsum(subscripts: str, /, *operands: Any) -> ndarray:
    """Einstein summation (NumPy's ``einsum``, without ``optimize`` or ``out``): explicit
    (``"ij,jk->ik"``) or implicit (``"ij,jk"``) output, ``...``, repeated subscripts within
    an operand (diagonals, ``"ii->i"``, ``"ii"`` for the trace). Operands are contracted left
    to right, each pair as one batched matmul on the device."""
    if not operands:
        raise ValueError("einsum: expected at least one operand")
    first = next((o for o in operands if isinstance(o, ndarray)), None)
    xs = [_operand(o, first) for o in operands]
    terms, out = _parse(subscripts, [x.ndim for x in xs])
    sizes: Dict[str, int] = {}
    for x, t in zip(xs, terms):
        for c, n in zip(t, x.shape):
            prev = sizes.get(c)
            if prev is None or prev == 1:
                sizes[c] = n  # an extent of 1 broadcasts to the other (0 included)
            elif n != 1 and n != prev:
                raise ValueError(f"einsum: subscript {c!r} has sizes {prev} and {n}")
    pending = []
    for x, t in zip(xs, terms):
        pending.append(_diagonals(x, t))
    # Subscripts each operand alone carries and nothing else needs are summed out first.
    for k, (x, t) in enumerate(pending):
        others = out + "".join(u for j, (_, u) in enumerate(pending) if j != k)
        pending[k] = _sum_out(x, t, others)
    acc, ta = pending[0]
    for k in range(1, len(pending)):
        b, tb = pending[k]
        keep = out + "".join(u for _, u in pending[k + 1:])
        acc, ta = _sum_out(acc, ta, keep + tb)
        b, tb = _sum_out(b, tb, keep + ta)
        acc, ta = _pair(acc, ta, b, tb, keep, sizes)
    acc, ta = _sum_out(acc, ta, out)
    return _arrange(acc, ta, out, sizes)
