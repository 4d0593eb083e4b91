"""``suanli.numpy``'s data-dependent operations against NumPy on seeded inputs: ``nonzero``,
boolean-mask and integer-array indexing read and written (NumPy's advanced-indexing rules,
with views and negative positions), the ``unique_*`` functions (NaNs distinct), the
random generator's ``permutation``, ``shuffle`` and ``choice``, and the exceptions NumPy
raises for bad indices."""

import numpy as np
import pytest

import suanli.numpy as xp

DTYPES = ["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float32"]
# The two-word dtypes, gathered and scattered a whole element (both words) at a time.
WIDE = ["complex64"] + (["float64"] if "float64" in xp.__array_namespace_info__().dtypes() else [])


def values(rng, dtype, shape, lo=-3, hi=3):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(lo, info.min), min(hi, info.max) + 1, shape).astype(dtype)
    if dtype == "complex64":  # both words distinct
        return (rng.integers(lo, hi + 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype(dtype)
    if dtype == "float64":  # all 53 mantissa bits, so a lost low word shows
        return rng.integers(lo, hi + 1, shape) + rng.uniform(0, 1, shape) / 3
    return rng.integers(lo, hi + 1, shape).astype(dtype)  # repeats, for unique


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (0, 3), (2100,)])
def test_nonzero_matches_numpy(rng, dtype, shape):
    h = values(rng, dtype, shape, -1, 1)
    if dtype == "float32" and h.size:
        h.reshape(-1)[::5] = np.nan
        h.reshape(-1)[1::5] = -0.0
    got = xp.nonzero(xp.asarray(h))
    want = np.nonzero(h)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == xp.int32
        np.testing.assert_array_equal(g.get(), w)


def test_nonzero_of_views_and_0d(rng):
    h = values(rng, "int32", (6, 8), -1, 1)
    v = xp.asarray(h)[::-2, 1::3].T
    for g, w in zip(v.nonzero(), h[::-2, 1::3].T.nonzero()):
        np.testing.assert_array_equal(g.get(), w)
    with pytest.raises(ValueError):
        xp.nonzero(xp.asarray(3))


KEYS = [
    lambda s: (np.array([0, -1, 2]),),
    lambda s: (slice(None), np.array([[1, -2], [0, 0]])),
    lambda s: (1, slice(None), np.array([0, 3])),  # not adjacent: the index axes go first
    lambda s: (np.array([1, 0]), slice(None), np.array([2, 3])),
    lambda s: (slice(None), np.array([[0], [2]]), np.array([1, 3, 0])),
    lambda s: (Ellipsis, np.array([3, 3, 1])),
    lambda s: (np.array([-1]), None, slice(1, None), 2),
    lambda s: (slice(None, None, -1), [2, 0]),
    lambda s: (np.arange(s[0]) % 2 == 0,),
    lambda s: (slice(None), np.array([True, False, True, True, False])),
    lambda s: (np.ones(s[:2], dtype=bool) & (np.arange(s[1]) > 1),),
    lambda s: ([],),
    lambda s: (True,),
    lambda s: (False, Ellipsis, 0),
    lambda s: (slice(None), np.array(True), np.array([0, 2])),
]


@pytest.mark.parametrize("k", range(len(KEYS)))
@pytest.mark.parametrize("dtype", ["float32", "int16", "bool"] + WIDE)
def test_advanced_getitem_matches_numpy(rng, k, dtype):
    shape = (4, 5, 6)
    h = values(rng, dtype, shape, -50, 50)
    key = KEYS[k](shape)
    x = xp.asarray(h)
    got = x[key]
    want = h[key]
    assert got.shape == want.shape, (key, got.shape, want.shape)
    np.testing.assert_array_equal(got.get(), want)
    # Through a non-contiguous view (the middle axis reversed), the same key.
    xv = xp.asarray(h)[:, ::-1]
    hv = h[:, ::-1]
    np.testing.assert_array_equal(xv[key].get(), hv[key])


@pytest.mark.parametrize("k", range(len(KEYS)))
def test_advanced_setitem_matches_numpy(rng, k):
    shape = (4, 5, 6)
    h = values(rng, "int32", shape, -50, 50)
    key = KEYS[k](shape)
    sel = h[key].shape
    x = xp.asarray(h)
    want = h.copy()
    if not _has_repeats(h, key):
        v = values(rng, "int32", sel[-1:] if sel else (), 100, 200)
        x[key] = xp.asarray(v)
        want[key] = v
        np.testing.assert_array_equal(x.get(), want)
    x[key] = 7
    want[key] = 7
    np.testing.assert_array_equal(x.get(), want)


@pytest.mark.parametrize("k", range(len(KEYS)))
@pytest.mark.parametrize("dtype", WIDE)
def test_advanced_setitem_of_wide_dtypes_matches_numpy(rng, k, dtype):
    shape = (4, 5, 6)
    h = values(rng, dtype, shape, -50, 50)
    key = KEYS[k](shape)
    sel = h[key].shape
    x = xp.asarray(h)
    want = h.copy()
    if not _has_repeats(h, key):
        v = values(rng, dtype, sel[-1:] if sel else (), 100, 200)
        x[key] = xp.asarray(v)
        want[key] = v
        np.testing.assert_array_equal(x.get(), want)
    x[key] = 7.25
    want[key] = 7.25
    np.testing.assert_array_equal(x.get(), want)


@pytest.mark.parametrize("dtype", WIDE)
def test_take_and_masks_of_wide_dtypes_match_numpy(rng, dtype):
    h = values(rng, dtype, (4, 5, 6), -50, 50)
    x = xp.asarray(h)
    idx = np.array([[0, -1], [3, 2]], dtype=np.int32)
    for axis in range(3):
        got = xp.take(x, xp.asarray(idx.ravel()), axis=axis)
        np.testing.assert_array_equal(got.get(), np.take(h, idx.ravel(), axis=axis))
    # A view, empty indices, take_along_axis with broadcast indices.
    np.testing.assert_array_equal(xp.take(x[:, ::-2], xp.asarray([-1, 0]), axis=1).get(),
                                  np.take(h[:, ::-2], [-1, 0], axis=1))
    np.testing.assert_array_equal(xp.take(x, xp.asarray(np.zeros(0, np.int32)), axis=2).get(),
                                  np.take(h, np.zeros(0, np.int32), axis=2))
    ia = rng.integers(-5, 5, (1, 3, 6)).astype(np.int32)
    np.testing.assert_array_equal(xp.take_along_axis(x, xp.asarray(ia), axis=1).get(),
                                  np.take_along_axis(h, np.broadcast_to(ia % 5, (4, 3, 6)), axis=1))
    m = h.real > 0 if dtype == "complex64" else h > 0
    np.testing.assert_array_equal(x[xp.asarray(m)].get(), h[m])
    x[xp.asarray(m)] = xp.asarray(np.asarray(-1.5, dtype=dtype))
    h[m] = -1.5
    np.testing.assert_array_equal(x.get(), h)


def _has_repeats(h, key):
    """Whether the key selects an element twice (then which write stays is unspecified)."""
    pos = np.arange(h.size).reshape(h.shape)[key].reshape(-1)
    return len(np.unique(pos)) != len(pos)


def test_mask_assignment_and_conditions(rng):
    h = rng.standard_normal((30, 40)).astype(np.float32)
    x = xp.asarray(h)
    np.testing.assert_array_equal(x[x > 0.5].get(), h[h > 0.5])
    x[x < 0] = 0.0
    h[h < 0] = 0.0
    np.testing.assert_array_equal(x.get(), h)
    m = h[:, 0] > 0.2
    x[xp.asarray(m)] = xp.asarray(np.arange(40, dtype=np.float32))
    h[m] = np.arange(40, dtype=np.float32)
    np.testing.assert_array_equal(x.get(), h)
    # NumPy masks and index arrays (int64 on the host) are accepted.
    np.testing.assert_array_equal(x[np.array([3, -1], dtype=np.int64)].get(), h[[3, -1]])
    np.testing.assert_array_equal(x[m].get(), h[m])


def test_empty_mask_axis_selects_nothing_from_any_length():
    # NumPy accepts a mask axis of length 0 against an axis of any length.
    h = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = xp.asarray(h)
    for m in (np.zeros(0, bool), np.zeros((0, 4), bool), np.zeros((0, 0), bool)):
        got = x[xp.asarray(m)]
        assert got.shape == h[m].shape
        x[xp.asarray(m)] = 7.0
    one = xp.asarray(np.ones(1, dtype=np.float32))
    assert one[xp.asarray(np.zeros(0, bool))].shape == (0,)
    np.testing.assert_array_equal(x.get(), h)
    with pytest.raises(IndexError):
        x[np.zeros((0, 3), bool)]  # a non-zero length must still match


def test_bad_indices_raise_numpys_exceptions():
    x = xp.asarray(np.arange(12, dtype=np.int32).reshape(3, 4))
    with pytest.raises(IndexError):
        x[np.array([0, 3])]
    with pytest.raises(IndexError):
        x[:, np.array([-5])]
    with pytest.raises(IndexError):
        x[np.array([True, False])]  # wrong mask shape
    with pytest.raises(IndexError):
        x[np.array([0.0, 1.0])]  # float index
    with pytest.raises(IndexError):
        x[xp.asarray(np.array([1.0], dtype=np.float32))]
    with pytest.raises(IndexError):
        x[np.array([0, 1]), np.array([0, 1, 2])]  # do not broadcast
    with pytest.raises(IndexError):
        x[0, 0, np.array([0])]
    with pytest.raises(ValueError):
        x[np.array([0, 1])] = xp.asarray(np.ones(3, dtype=np.int32))
    before = x.get()
    with pytest.raises(IndexError):
        x[np.array([0, 9])] = 1
    np.testing.assert_array_equal(x.get(), before)


def _np_unique_all(h):
    flat = h.reshape(-1)
    order = np.argsort(flat, kind="stable")
    s = flat[order]
    head = np.ones(len(s), dtype=bool)
    head[1:] = s[1:] != s[:-1]
    at = np.nonzero(head)[0]
    inv = np.empty(len(s), dtype=np.int64)
    inv[order] = np.cumsum(head) - 1
    counts = np.diff(np.append(at, len(s)))
    return s[at], order[at], inv.reshape(h.shape), counts


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(9,), (4, 6), (0,), (1300,), ()])
def test_unique_functions_match_numpy(rng, dtype, shape):
    h = values(rng, dtype, shape)
    if dtype == "float32" and h.size > 2:
        h.reshape(-1)[::4] = np.nan
    x = xp.asarray(h)
    vals, idx, inv, counts = _np_unique_all(h)
    u = xp.unique_all(x)
    np.testing.assert_array_equal(u.values.get(), vals)
    assert u.values.dtype == x.dtype
    np.testing.assert_array_equal(u.indices.get(), idx)
    np.testing.assert_array_equal(u.inverse_indices.get(), inv)
    assert u.inverse_indices.shape == h.shape
    np.testing.assert_array_equal(u.counts.get(), counts)
    np.testing.assert_array_equal(xp.unique_values(x).get(), vals)
    c = xp.unique_counts(x)
    np.testing.assert_array_equal(c.counts.get(), counts)
    i = xp.unique_inverse(x)
    np.testing.assert_array_equal(i.values.get()[i.inverse_indices.get()], h)
    # NumPy's own unique: each NaN distinct, first positions, counts.
    nv, ni, nc = np.unique(h, return_index=True, return_counts=True, equal_nan=False)
    np.testing.assert_array_equal(u.values.get(), nv)
    np.testing.assert_array_equal(u.indices.get(), ni)
    np.testing.assert_array_equal(u.counts.get(), nc)


def test_permutation_shuffle_choice():
    g = xp.random.default_rng(3)
    p = g.permutation(1000).get()
    assert p.dtype == np.int32 and sorted(p) == list(range(1000))
    np.testing.assert_array_equal(xp.random.default_rng(3).permutation(1000).get(), p)
    h = np.arange(20, dtype=np.float32).reshape(5, 4)
    y = g.permutation(xp.asarray(h)).get()
    assert sorted(y[:, 0].tolist()) == h[:, 0].tolist()
    np.testing.assert_array_equal(y[:, 1:] - y[:, :1], h[:, 1:] - h[:, :1])
    x = xp.asarray(h)
    g.shuffle(x)
    got = x.get()
    assert sorted(map(tuple, got.tolist())) == sorted(map(tuple, h.tolist()))
    # A long axis is moved (the identity has probability 1/300!), and every row kept.
    long = np.arange(600, dtype=np.int32).reshape(300, 2)
    xl = xp.asarray(long)
    g.shuffle(xl)
    gl = xl.get()
    assert not np.array_equal(gl, long)
    np.testing.assert_array_equal(np.sort(gl[:, 0]), long[:, 0])
    np.testing.assert_array_equal(gl[:, 1], gl[:, 0] + 1)
    c = g.choice(10, size=(3, 2), replace=False).get()
    assert c.shape == (3, 2) and len(set(c.reshape(-1))) == 6
    r = g.choice(xp.asarray(h), size=7, axis=1)
    assert r.shape == (5, 7)
    columns = {tuple(col) for col in h.T.tolist()}
    assert all(tuple(col) in columns for col in r.get().T.tolist())
    pr = np.array([0.5, 0.0, 0.25, 0.25])
    d = g.choice(4, size=20000, p=pr).get()
    freq = np.bincount(d, minlength=4) / 20000
    assert freq[1] == 0 and np.allclose(freq, pr, atol=0.02)
    # Without replacement an item of probability 0 (-0.0 too, which NumPy accepts) is never
    # drawn.
    for seed in range(20):
        w = xp.random.default_rng(seed).choice(4, size=3, replace=False, p=[-0.0, 0.5, 0.25, 0.25]).get()
        assert sorted(w.tolist()) == [1, 2, 3]
    w = g.choice(4, size=3, replace=False, p=pr).get()
    assert sorted(w.tolist()) == [0, 2, 3]
    with pytest.raises(ValueError):
        g.choice(4, size=5, replace=False)
    with pytest.raises(ValueError):
        g.choice(3, p=[0.5, 0.6, 0.1])
    with pytest.raises(ValueError):
        g.choice(4, size=4, replace=False, p=pr)
    assert g.choice(5).shape == ()
