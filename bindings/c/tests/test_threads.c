/* Two threads on one device at once: one launches a WGSL kernel over and over on its own
 * tensors, the other runs predict on its own model; both check every result. Devices,
 * tensors and kernels are documented as thread-safe, models as one thread at a time
 * (each thread here has its own). */
#include "suanli.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

enum { ROUNDS = 40, N = 4099 };

static suanli_device *dev;
static int errors[2];

static const char *ADD_ONE =
    "@group(0) @binding(0) var<storage, read_write> v: array<f32>;\n"
    "@compute @workgroup_size(64)\n"
    "fn add_one(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {\n"
    "    let i = g.x + g.y * n.x * 64u;\n"
    "    if (i < arrayLength(&v)) { v[i] = v[i] + 1.0; }\n"
    "}\n";

static void *kernels(void *arg) {
    (void)arg;
    static float host[N];
    size_t shape[1] = {N};
    suanli_tensor *t = NULL;
    suanli_kernel *k = NULL;
    memset(host, 0, sizeof host);
    if (suanli_tensor_from_data(dev, host, N, shape, 1, &t) != SUANLI_OK ||
        suanli_kernel_compile(dev, ADD_ONE, "add_one", &k) != SUANLI_OK) {
        fprintf(stderr, "kernels: %s\n", suanli_last_error());
        errors[0]++;
        return NULL;
    }
    const suanli_tensor *args[1] = {t};
    for (int r = 1; r <= ROUNDS; r++) {
        if (suanli_kernel_launch(k, args, 1, NULL, 0, N, 0, 0) != SUANLI_OK ||
            suanli_tensor_download(t, host, N) != SUANLI_OK) {
            fprintf(stderr, "kernels round %d: %s\n", r, suanli_last_error());
            errors[0]++;
            break;
        }
        for (int i = 0; i < N; i++)
            if (host[i] != (float)r) {
                errors[0]++;
                break;
            }
    }
    suanli_kernel_release(k);
    suanli_tensor_release(t);
    return NULL;
}

static void *predictions(void *arg) {
    (void)arg;
    size_t shape[1] = {8};
    suanli_model *m = NULL;
    float x[16 * 8], first[16 * 3], y[16 * 3];
    for (int i = 0; i < 16 * 8; i++) x[i] = sinf((float)i);
    if (suanli_model_new(dev, shape, 1, 5, &m) != SUANLI_OK ||
        suanli_model_add(m, "{\"class_name\": \"Dense\", \"config\": {\"units\": 16, \"activation\": \"tanh\"}}") != SUANLI_OK ||
        suanli_model_add(m, "{\"class_name\": \"Dense\", \"config\": {\"units\": 3, \"activation\": \"softmax\"}}") != SUANLI_OK ||
        suanli_model_predict(m, x, 16, first, 16 * 3) != SUANLI_OK) {
        fprintf(stderr, "predictions: %s\n", suanli_last_error());
        errors[1]++;
        suanli_model_release(m);
        return NULL;
    }
    for (int r = 0; r < ROUNDS; r++) {
        if (suanli_model_predict(m, x, 16, y, 16 * 3) != SUANLI_OK) {
            fprintf(stderr, "predict round %d: %s\n", r, suanli_last_error());
            errors[1]++;
            break;
        }
        if (memcmp(first, y, sizeof y) != 0) errors[1]++;
    }
    suanli_model_release(m);
    return NULL;
}

int main(void) {
    if (suanli_device_open("auto", &dev) != SUANLI_OK) {
        fprintf(stderr, "%s\n", suanli_last_error());
        return 1;
    }
    pthread_t a, b;
    pthread_create(&a, NULL, kernels, NULL);
    pthread_create(&b, NULL, predictions, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    suanli_device_release(dev);
    printf("test_threads: %s (kernel thread %d errors, predict thread %d)\n", errors[0] + errors[1] ? "FAILED" : "ok", errors[0], errors[1]);
    return errors[0] + errors[1] ? 1 : 0;
}
