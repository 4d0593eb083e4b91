/* y = a·x + y on 1,000,003 elements with your own WGSL kernel, checked against the CPU.
 *   cc saxpy.c $(pkg-config --cflags --libs suanli) -lm -o saxpy */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "suanli.h"

static const char *SAXPY =
    "struct P { n: u32, a: f32 }\n"
    "@group(0) @binding(0) var<storage, read> x: array<f32>;\n"
    "@group(0) @binding(1) var<storage, read_write> y: array<f32>;\n"
    "@group(0) @binding(2) var<uniform> p: P;\n"
    "@compute @workgroup_size(256)\n"
    "fn saxpy(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {\n"
    "    let i = g.x + g.y * n.x * 256u;\n"
    "    if (i < p.n) { y[i] = p.a * x[i] + y[i]; }\n"
    "}\n";

#define TRY(call)                                                      \
    do {                                                               \
        if ((call) != SUANLI_OK) {                                     \
            fprintf(stderr, "%s\n", suanli_last_error());              \
            return 1;                                                  \
        }                                                              \
    } while (0)

int main(void) {
    enum { N = 1000003 };
    float *x = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N), *r = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i % 1000) * 0.001f;
        y[i] = (float)(i % 7);
    }
    suanli_device *dev = NULL;
    suanli_tensor *tx = NULL, *ty = NULL;
    suanli_kernel *k = NULL;
    size_t shape[1] = {N};
    TRY(suanli_device_open("auto", &dev));
    TRY(suanli_tensor_from_data(dev, x, N, shape, 1, &tx));
    TRY(suanli_tensor_from_data(dev, y, N, shape, 1, &ty));
    TRY(suanli_kernel_compile(dev, SAXPY, "saxpy", &k));
    struct { uint32_t n; float a; } p = {N, 2.5f};
    const suanli_tensor *args[2] = {tx, ty};
    TRY(suanli_kernel_launch(k, args, 2, (const uint8_t *)&p, sizeof p, N, 0, 0));
    TRY(suanli_tensor_download(ty, r, N));
    int wrong = 0;
    for (int i = 0; i < N; i++)
        if (fabsf(r[i] - (2.5f * x[i] + y[i])) > 1e-5f) wrong++;
    printf("saxpy on %d elements: %d wrong\n", N, wrong);
    suanli_kernel_release(k);
    suanli_tensor_release(tx);
    suanli_tensor_release(ty);
    suanli_device_release(dev);
    free(x);
    free(y);
    free(r);
    return wrong ? 1 : 0;
}
