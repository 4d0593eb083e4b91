import numpy as np
import pytest

import suanli

SAXPY = """
struct Params { n: u32, a: f32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn saxpy(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 64u;
    if (i < p.n) {
        y[i] = p.a * x[i] + y[i];
    }
}
"""


def params(n, a):
    return np.array([n], np.uint32).tobytes() + np.array([a], np.float32).tobytes()


def test_saxpy_matches_numpy_on_ragged_sizes(rng):
    k = suanli.RawKernel(SAXPY, "saxpy")
    assert k.bindings == [("x", "read"), ("y", "read_write"), ("p", "uniform")]
    assert k.workgroup_size == (64, 1, 1)
    for n in [1, 63, 64, 65, 1000, 4099]:
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        tx, ty = suanli.asarray(x), suanli.asarray(y)
        k(n, (tx, ty), uniforms=params(n, 2.5))
        want = np.float32(2.5) * x + y
        np.testing.assert_allclose(ty.numpy(), want, rtol=1e-6, atol=1e-6)


def test_only_the_first_n_elements_are_written_and_grids_can_be_explicit(rng):
    k = suanli.RawKernel(SAXPY, "saxpy")
    n, total = 100, 256
    x = rng.standard_normal(total).astype(np.float32)
    y = np.full(total, np.nan, np.float32)  # poisoned past n
    y[:n] = 0
    ty = suanli.asarray(y)
    k((2,), (suanli.asarray(x), ty), uniforms=[params(n, 1.0)])
    got = ty.numpy()
    np.testing.assert_allclose(got[:n], x[:n], rtol=1e-6)
    assert np.isnan(got[n:]).all()


def test_wgsl_errors_name_line_and_column():
    bad = SAXPY.replace("y[i] = p.a * x[i] + y[i];", "y[i] = p.a * x[i] + undefined_name;")
    with pytest.raises(ValueError) as e:
        suanli.RawKernel(bad, "saxpy")
    line = bad.splitlines().index(next(l for l in bad.splitlines() if "undefined_name" in l)) + 1
    assert f":{line}:" in str(e.value), str(e.value)
    with pytest.raises(ValueError, match="entry"):
        suanli.RawKernel(SAXPY, "no_such_entry")


def test_bad_arguments_raise_before_anything_runs(rng):
    k = suanli.RawKernel(SAXPY, "saxpy")
    x = rng.standard_normal(8).astype(np.float32)
    tx, ty = suanli.asarray(x), suanli.asarray(np.zeros(8, np.float32))
    with pytest.raises(ValueError, match="2 tensor"):
        k(8, (tx,), uniforms=params(8, 1.0))
    with pytest.raises(ValueError, match="uniform"):
        k(8, (tx, ty))
    with pytest.raises(ValueError):  # a uniform smaller than the struct
        k(8, (tx, ty), uniforms=np.array([8], np.uint32))
    with pytest.raises(TypeError):
        k(8, (tx, x), uniforms=params(8, 1.0))
    with pytest.raises(TypeError):
        k(8, (x, ty), uniforms=params(8, 1.0))  # a NumPy array first
    with pytest.raises(TypeError, match="np.array"):
        k(8, (tx, ty), uniforms=8)  # an int is not its bytes
    with pytest.raises(TypeError):
        k("eight", (tx, ty), uniforms=params(8, 1.0))
    with pytest.raises(ValueError):
        k((1, 1, 1, 1), (tx, ty), uniforms=params(8, 1.0))
    # None of those ran: y is still zero.
    np.testing.assert_array_equal(ty.numpy(), np.zeros(8, np.float32))


INT_SCALE = """
@group(0) @binding(0) var<storage, read> x: array<i32>;
@group(0) @binding(1) var<storage, read_write> y: array<i32>;
@group(0) @binding(2) var<uniform> n: u32;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < n) {
        y[gid.x] = x[gid.x] * 3 + y[gid.x];
    }
}
"""


def test_raw_kernel_over_suanli_numpy_arrays(rng):
    import suanli.numpy as xp

    k = suanli.RawKernel(SAXPY, "saxpy")
    x = rng.standard_normal(300).astype(np.float32)
    y = rng.standard_normal(300).astype(np.float32)
    ax, ay = xp.asarray(x), xp.asarray(y)
    k(300, (ax * 2.0, ay), uniforms=params(300, 0.5))  # a pending expression is run first
    np.testing.assert_allclose(np.asarray(ay), np.float32(0.5) * (2 * x) + y, rtol=1e-6, atol=1e-6)
    # Integer arrays: the kernel sees their words as i32; a strided view can be read (a copy).
    ki = suanli.RawKernel(INT_SCALE, "main")
    a = rng.integers(-1000, 1000, size=20).astype(np.int32)
    b = rng.integers(-1000, 1000, size=10).astype(np.int32)
    xa, xb = xp.asarray(a), xp.asarray(b)
    ki(10, (xa[::2], xb), uniforms=np.array(10, np.uint32))
    np.testing.assert_array_equal(np.asarray(xb), a[::2] * 3 + b)
    # A view cannot be written through.
    with pytest.raises(ValueError, match="contiguous"):
        ki(10, (xb, xa[::2]), uniforms=np.array(10, np.uint32))


CONJ = """
@group(0) @binding(0) var<storage, read_write> z: array<f32>;
@group(0) @binding(1) var<uniform> n: u32;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < n) {
        z[2u * gid.x + 1u] = -z[2u * gid.x + 1u];
    }
}
"""


def test_raw_kernel_sees_complex64_as_interleaved_words(rng):
    import suanli.numpy as xp

    v = (rng.standard_normal(37) + 1j * rng.standard_normal(37)).astype(np.complex64)
    z = xp.asarray(v)
    suanli.RawKernel(CONJ, "main")(37, (z,), uniforms=np.array(37, np.uint32))
    np.testing.assert_array_equal(np.asarray(z), np.conj(v))
