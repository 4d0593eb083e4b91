"""``suanli.numpy`` against NumPy on seeded inputs: every elementwise function on every dtype
it takes (NumPy computes in float64, then both are compared in the result's dtype),
broadcasting, Python scalars, operators in place, indexing and assignment through views,
reductions, matmul, creation, a heat-equation stencil moved over from NumPy, and the
exceptions NumPy users expect."""

import numpy as np
import pytest

import suanli.numpy as xp

DTYPES = ["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float32"]
UNARY_DOMAIN = {
    "sqrt": (0.01, 100), "log": (0.01, 100), "log2": (0.01, 100), "log10": (0.01, 100),
    "log1p": (-0.9, 10), "acosh": (1, 10), "asin": (-0.99, 0.99), "acos": (-0.99, 0.99),
    "atanh": (-0.99, 0.99), "exp": (-10, 10), "expm1": (-10, 10), "sinh": (-10, 10),
    "cosh": (-10, 10), "tan": (-1.5, 1.5),
}
NP_NAMES = {"pow": "power", "atan2": "arctan2", "asin": "arcsin", "acos": "arccos",
            "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh",
            "bitwise_invert": "invert", "bitwise_left_shift": "left_shift",
            "bitwise_right_shift": "right_shift"}


def values(rng, dtype, shape, lo=-50, hi=50):
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if info is not None:
        return rng.integers(max(lo, info.min), min(hi, info.max) + 1, shape).astype(dtype)
    return rng.uniform(lo, hi, shape).astype(dtype)


def close(got, want, dtype, rtol):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def np_ref(name, *args):
    f = getattr(np, NP_NAMES.get(name, name))
    return f(*args)


@pytest.mark.parametrize("name", sorted(set(xp._UNARY) - {"signbit", "sign"}))
def test_unary_against_numpy(name, rng):
    lo, hi = UNARY_DOMAIN.get(name, (-50, 50))
    for dt in DTYPES:
        a = values(rng, dt, (4, 5), lo, hi)
        try:
            got = getattr(xp, name)(xp.asarray(a))
        except TypeError:
            # The standard refuses arithmetic on bool where NumPy allows it; else NumPy
            # must refuse too.
            if dt != "bool":
                with pytest.raises(TypeError):
                    np_ref(name, a)
            continue
        out = np.asarray(got)
        # Integer and bool inputs of float functions give float32 here (NumPy picks float16
        # for 8-bit inputs): the reference is computed in float64 either way.
        src = a.astype(np.float64) if a.dtype.kind == "f" or out.dtype.kind == "f" else a
        want = np_ref(name, src)
        if want.dtype == np.float64:
            want = want.astype(np.float32)
        close(out, want, want.dtype, 2e-6)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "floor_divide", "remainder",
                                  "maximum", "minimum", "equal", "less", "greater_equal", "logical_and",
                                  "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "atan2",
                                  "hypot", "logaddexp", "copysign", "pow"])
def test_binary_against_numpy_with_broadcasting(name, rng):
    for dt in ["int8", "uint16", "int32", "float32", "bool"]:
        lo, hi = (0.5, 3) if name == "pow" else (-20, 20)
        a = values(rng, dt, (3, 1, 4), lo, hi)
        b = values(rng, dt, (5, 1), 0 if name == "pow" else lo, 4 if name == "pow" else hi)
        if name in ("floor_divide", "remainder") and dt != "float32":
            b = np.where(b == 0, 1, b).astype(dt)
        try:
            got = np.asarray(getattr(xp, name)(xp.asarray(a), xp.asarray(b)))
        except TypeError:
            continue  # bool arithmetic and float bitwise: NumPy refuses some, we refuse all
        f64 = dt == "float32" or got.dtype.kind == "f"  # NumPy would pick float16 for int8
        wa = a.astype(np.float64) if f64 else a
        wb = b.astype(np.float64) if f64 else b
        want = np_ref(name, wa, wb)
        if want.dtype == np.float64 or (want.dtype.kind == "f" and dt != "float32"):
            want = want.astype(np.float32)
        close(got, want, want.dtype, 2e-6 if name != "pow" else 1e-5)


def test_scalars_promotion_and_in_place_operators():
    a = xp.asarray(np.array([1, 2, 3], np.int8))
    assert (a + 1).dtype == xp.int8
    assert (a * 0.5).dtype == xp.float32
    assert (2 - a).get().tolist() == [1, 0, -1]
    assert (a + xp.asarray(np.array([1, 1, 1], np.uint8))).dtype == xp.int16
    with pytest.raises(OverflowError):  # NumPy 2's error for an int its dtype cannot hold
        a + 1000
    b = xp.asarray([1.0, 2.0, 3.0])
    alias = b
    b += 1
    b *= xp.asarray([2.0, 2.0, 2.0])
    assert alias is b and b.get().tolist() == [4.0, 6.0, 8.0]
    with pytest.raises(ValueError):
        b += xp.ones((2, 3))


def test_indexing_and_assignment_through_views(rng):
    a = rng.standard_normal((5, 6, 7)).astype(np.float32)
    x = xp.asarray(a)
    for key in [(1,), (slice(None, None, -2), 3), (Ellipsis, None, slice(1, -1)), (-1, slice(5, 1, -1), 0)]:
        np.testing.assert_array_equal(np.asarray(x[key]), a[key])
    y = xp.full((4, 5), float("nan"))
    y[1::2, ::-2] = xp.asarray(np.arange(3, dtype=np.float32))
    want = np.full((4, 5), np.nan, np.float32)
    want[1::2, ::-2] = np.arange(3)
    np.testing.assert_array_equal(np.asarray(y), want)
    z = xp.arange(6)
    z[1:] = z[:-1] * 10
    assert z.get().tolist() == [0, 0, 10, 20, 30, 40]
    with pytest.raises(IndexError):
        x[5]
    with pytest.raises(IndexError):
        x[xp.asarray([0, 5])]  # integer arrays index (test_numpy_indexing.py), in range only


def test_reductions_against_numpy(rng):
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    x = xp.asarray(a)
    for axis in [None, 0, (1, 2), -1]:
        for keep in [False, True]:
            np.testing.assert_allclose(np.asarray(xp.sum(x, axis=axis, keepdims=keep)),
                                       a.astype(np.float64).sum(axis=axis, keepdims=keep), rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(np.asarray(xp.max(x, axis=axis, keepdims=keep)), a.max(axis=axis, keepdims=keep))
            np.testing.assert_allclose(np.asarray(xp.std(x, axis=axis, correction=1, keepdims=keep)),
                                       a.astype(np.float64).std(axis=axis, ddof=1, keepdims=keep), rtol=1e-4)
    assert int(xp.argmax(x)) == int(np.argmax(a))
    np.testing.assert_array_equal(np.asarray(xp.argmin(x, axis=1)), np.argmin(a, axis=1))
    assert bool(xp.any(x > 3.0)) == bool((a > 3.0).any())
    with pytest.raises(ValueError):
        xp.max(xp.zeros((0,)))


def test_matmul_against_numpy(rng):
    for sa, sb in [((7, 5), (5, 3)), ((2, 1, 4, 6), (3, 6, 2)), ((5,), (5, 4)), ((4, 5), (5,)), ((6,), (6,))]:
        a = rng.standard_normal(sa).astype(np.float32)
        b = rng.standard_normal(sb).astype(np.float32)
        got = xp.asarray(a) @ xp.asarray(b)
        np.testing.assert_allclose(np.asarray(got), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    m = rng.standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(xp.asarray(m).T @ xp.asarray(m)), m.T.astype(np.float64) @ m, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):
        xp.asarray(m) @ xp.asarray(m)


def test_creation_functions():
    np.testing.assert_array_equal(np.asarray(xp.arange(2, 11, 3)), np.arange(2, 11, 3, dtype=np.int32))
    np.testing.assert_allclose(np.asarray(xp.linspace(0, 1, 7)), np.linspace(0, 1, 7, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(xp.eye(3, 5, k=1)), np.eye(3, 5, k=1, dtype=np.float32))
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(np.asarray(xp.tril(xp.asarray(m), k=-1)), np.tril(m, -1))
    np.testing.assert_array_equal(np.asarray(xp.triu(xp.asarray(m))), np.triu(m))
    gx, gy = xp.meshgrid(xp.arange(3), xp.arange(4))
    nx, ny = np.meshgrid(np.arange(3), np.arange(4))
    np.testing.assert_array_equal(np.asarray(gx), nx.astype(np.int32))
    np.testing.assert_array_equal(np.asarray(gy), ny.astype(np.int32))
    assert xp.zeros((2, 3), dtype=xp.uint8).dtype == xp.uint8
    c = xp.concat([xp.asarray(m), xp.asarray(m)], axis=0)
    np.testing.assert_array_equal(np.asarray(c), np.concatenate([m, m]))
    np.testing.assert_array_equal(np.asarray(xp.roll(xp.asarray(m), 1, axis=1)), np.roll(m, 1, axis=1))
    np.testing.assert_array_equal(np.asarray(xp.flip(xp.asarray(m))), np.flip(m))


def test_heat_stencil_matches_numpy():
    n = 32
    u0 = np.zeros((n, n), np.float32)
    u0[0, :] = 1.0
    u = u0.copy()
    x = xp.asarray(u0)
    for _ in range(20):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        x[1:-1, 1:-1] = 0.25 * (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])
    np.testing.assert_allclose(np.asarray(x), u, rtol=1e-6, atol=1e-7)


def test_errors_are_the_exceptions_numpy_users_expect():
    if "int64" not in xp.__array_namespace_info__().dtypes():
        with pytest.raises(TypeError, match="int64"):
            xp.asarray(np.zeros(3, dtype=np.int64))  # no silent narrowing
    with pytest.raises(TypeError):
        xp.asarray(np.zeros(3, dtype=np.complex128))  # no silent narrowing
    assert xp.asarray(np.zeros(3), dtype=xp.float32).dtype == xp.float32
    with pytest.raises(ValueError):
        xp.ones((3,)) + xp.ones((4,))
    with pytest.raises(TypeError):
        xp.bitwise_and(xp.ones(3), xp.ones(3))
    with pytest.raises(TypeError):
        xp.empty(3, dtype="complex128")
    with pytest.raises(ValueError):
        xp.reshape(xp.ones(6), (4, 2))
    with pytest.raises(TypeError):
        float(xp.ones(3))
    x = xp.ones((2, 2))
    assert x.__array_namespace__() is xp
    assert xp.__array_namespace_info__().default_dtypes()["integral"] == xp.int32


def test_sort_and_argsort_match_numpy_stable(rng):
    a = rng.integers(-3, 3, (4, 37)).astype(np.int16)
    f = rng.standard_normal((5, 6, 7)).astype(np.float32)
    f[0, 0, :3] = [np.nan, -0.0, 0.0]
    x, y = xp.asarray(a), xp.asarray(f)
    np.testing.assert_array_equal(np.asarray(xp.argsort(x)), np.argsort(a, kind="stable"))
    np.testing.assert_array_equal(np.asarray(xp.sort(x, axis=0)), np.sort(a, axis=0))
    for axis in (0, 1, -1):
        np.testing.assert_array_equal(np.asarray(xp.sort(y, axis=axis)), np.sort(f, axis=axis))
        np.testing.assert_array_equal(np.asarray(xp.argsort(y, axis=axis)), np.argsort(f, axis=axis, kind="stable"))
    # Descending and stable: equal values keep their order.
    got = np.asarray(xp.argsort(x, descending=True))
    np.testing.assert_array_equal(a[np.arange(4)[:, None], got], -np.sort(-a, axis=1))
    np.testing.assert_array_equal(got, np.argsort(-a.astype(np.int32), axis=1, kind="stable"))


def test_take_take_along_axis_and_searchsorted(rng):
    a = rng.standard_normal((4, 6)).astype(np.float32)
    x = xp.asarray(a)
    i = np.array([[0, -1], [2, 3]], np.int32)
    np.testing.assert_array_equal(np.asarray(xp.take(x, xp.asarray(i), axis=1)), np.take(a, i, axis=1))
    p = xp.argsort(x, axis=0)
    np.testing.assert_array_equal(np.asarray(xp.take_along_axis(x, p, axis=0)), np.sort(a, axis=0))
    s = np.sort(rng.integers(-5, 5, 20).astype(np.int32))
    q = rng.integers(-7, 7, 9).astype(np.int32)
    for side in ("left", "right"):
        np.testing.assert_array_equal(np.asarray(xp.searchsorted(xp.asarray(s), xp.asarray(q), side=side)),
                                      np.searchsorted(s, q, side=side))
    with pytest.raises(IndexError):
        xp.take(x, xp.asarray(np.array([6], np.int32)), axis=1)


def test_cumulative_sum_and_prod(rng):
    a = rng.integers(-3, 4, (4, 3000)).astype(np.int16)
    f = rng.standard_normal((5, 6)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(xp.cumulative_sum(xp.asarray(a), axis=1)), np.cumsum(a, axis=1, dtype=np.int32))
    got = np.asarray(xp.cumulative_sum(xp.asarray(f), axis=0, include_initial=True))
    np.testing.assert_allclose(got[1:], np.cumsum(f.astype(np.float64), axis=0), rtol=1e-5, atol=1e-6)
    assert (got[0] == 0).all()
    np.testing.assert_allclose(np.asarray(xp.cumulative_prod(xp.asarray(f), axis=-1)), np.cumprod(f.astype(np.float64), axis=-1), rtol=1e-5, atol=1e-6)


def test_keras_takes_suanli_arrays_as_it_takes_numpy_arrays():
    from suanli import keras

    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 8)).astype(np.float32)
    labels = (np.arange(64) % 3).astype(np.int32)

    def run(x, y):
        keras.utils.set_random_seed(1)
        m = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(3)])
        m.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        h = m.fit(x, y, epochs=2, batch_size=16, shuffle=False, verbose=0)
        return h.history["loss"], m.predict(x[:5], verbose=0), m.evaluate(x, y, verbose=0)

    want = run(a, labels)
    got = run(xp.asarray(a), xp.asarray(labels))
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[2] == want[2]


@pytest.mark.parametrize(
    "subscripts,shapes",
    [
        ("ij,jk->ik", [(3, 4), (4, 5)]),
        ("ij,jk", [(3, 4), (4, 5)]),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
        ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
        ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 6)]),
        ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]),
        ("ij,ij->i", [(3, 4), (3, 4)]),
        ("i,j->ij", [(3,), (4,)]),
        ("i,i->", [(7,), (7,)]),
        ("ii->i", [(4, 4)]),
        ("ii", [(4, 4)]),
        ("iij->j", [(3, 3, 4)]),
        ("ij->ji", [(3, 4)]),
        ("ij->", [(3, 4)]),
        ("ij,j->i", [(5, 1), (6,)]),
        ("Ab,bC->AC", [(3, 4), (4, 5)]),
        ("...i,Ai", [(3, 4), (3, 4)]),
        ("ij,jk->ik", [(0, 3), (3, 2)]),
        ("ij,jk->ik", [(2, 0), (0, 3)]),
    ],
)
def test_einsum_matches_numpy(subscripts, shapes):
    rng = np.random.default_rng(len(subscripts))
    ops = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    want = np.einsum(subscripts, *[o.astype(np.float64) for o in ops])
    got = xp.einsum(subscripts, *[xp.asarray(o) for o in ops])
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_einsum_bad_subscripts_raise_value_error():
    a = xp.ones((3, 4))
    with pytest.raises(ValueError):
        xp.einsum("ij,jk->ik", a, xp.ones((5, 2)))
    with pytest.raises(ValueError):
        xp.einsum("ijk->i", a)
    with pytest.raises(ValueError):
        xp.einsum("ij->kk", a)
    with pytest.raises(ValueError):
        xp.einsum("ij,jk->ik", a)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_repeat_with_per_element_counts_matches_numpy(axis):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    m = a.size if axis is None else a.shape[axis]
    counts = rng.integers(0, 4, size=m).astype(np.int32)
    want = np.repeat(a, counts, axis=axis)
    for reps in (xp.asarray(counts), list(counts.tolist())):
        got = xp.repeat(xp.asarray(a), reps, axis=axis)
        np.testing.assert_array_equal(np.asarray(got), want)
    with pytest.raises(ValueError):
        xp.repeat(xp.asarray(a), xp.asarray(np.full(m, -1, np.int32)), axis=axis)
    with pytest.raises(ValueError):
        xp.repeat(xp.asarray(a), xp.asarray(np.ones(m + 1, np.int32)), axis=axis)
