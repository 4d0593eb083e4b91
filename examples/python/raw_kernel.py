"""A WGSL kernel of your own on suanli tensors (CuPy's RawKernel): SAXPY, y = a*x + y,
checked against NumPy.

    pip install ./bindings/python
    python examples/python/raw_kernel.py
"""

import numpy as np

import suanli

SAXPY = """
struct Params { n: u32, a: f32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(256)
fn saxpy(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Past 65,535 work-groups the launch spills onto y: the linear index covers both.
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i < p.n) {
        y[i] = p.a * x[i] + y[i];
    }
}
"""

n, a = 1_000_003, np.float32(2.5)
rng = np.random.default_rng(0)
x = rng.standard_normal(n, dtype=np.float32)
y = rng.standard_normal(n, dtype=np.float32)

dev = suanli.current_device()
kernel = suanli.RawKernel(SAXPY, "saxpy")  # validated by naga, compiled once per device
print(f"Device: {dev.name}; bindings {kernel.bindings}; workgroup size {kernel.workgroup_size}")

tx, ty = suanli.asarray(x), suanli.asarray(y)
params = np.array([n], np.uint32).tobytes() + np.array([a], np.float32).tobytes()
kernel(n, (tx, ty), uniforms=params)  # n invocations; returns at once

got = ty.numpy()  # waits for the kernel
want = a * x + y
err = float(np.max(np.abs(got - want)))
print(f"SAXPY of {n} elements: max |suanli - NumPy| = {err:.3g}")
assert err <= 1e-6 * float(np.max(np.abs(want))), "SAXPY differs from NumPy"

# A mistake in the WGSL is a ValueError naming the line and column, before the driver sees it.
try:
    suanli.RawKernel(SAXPY.replace("p.a * x[i]", "p.a * z[i]"), "saxpy")
except ValueError as e:
    print("A typo is caught by naga:", str(e).splitlines()[0])
