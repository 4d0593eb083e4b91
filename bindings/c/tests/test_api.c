/* The C API on good and bad input: every call's status and message are checked, and
 * nothing crashes. Numbers against CPU references: a matmul and a WGSL SAXPY. With
 * SUANLI_C_TEST_PANIC=suanli_tensor_zeros the planted panic must come back as
 * SUANLI_ERROR_INTERNAL and the process must go on (run as a second ctest). */
#include "suanli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                          \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fprintf(stderr, " (last error: %s)\n", suanli_last_error());                  \
            failures++;                                                                   \
        }                                                                                 \
    } while (0)

#define EXPECT(call, status, needle)                                                      \
    do {                                                                                  \
        suanli_status s_ = (call);                                                        \
        CHECK(s_ == (status), "%s returned %d, expected %d", #call, (int)s_, (int)(status)); \
        CHECK(strstr(suanli_last_error(), (needle)) != NULL, "%s: message lacks '%s'", #call, (needle)); \
    } while (0)

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

static int planted_panic(void) {
    suanli_device *dev = NULL;
    if (suanli_device_open("auto", &dev) != SUANLI_OK) return 1;
    size_t shape[1] = {4};
    suanli_tensor *t = NULL;
    EXPECT(suanli_tensor_zeros(dev, shape, 1, &t), SUANLI_ERROR_INTERNAL, "panic planted");
    CHECK(t == NULL, "no tensor after a panic");
    /* The process goes on, and other calls work. */
    EXPECT(suanli_tensor_from_data(dev, (float[]){1, 2, 3, 4}, 4, shape, 1, &t), SUANLI_OK, "");
    suanli_tensor_release(t);
    suanli_device_release(dev);
    printf("planted panic: %s\n", failures ? "FAILED" : "caught, process went on");
    return failures ? 1 : 0;
}

int main(void) {
    if (getenv("SUANLI_C_TEST_PANIC")) return planted_panic();
    CHECK(suanli_api_version() == 100, "api version %u", suanli_api_version());

    size_t count = 0;
    EXPECT(suanli_device_count(&count), SUANLI_OK, "");
    CHECK(count >= 1, "at least one adapter, found %zu", count);
    EXPECT(suanli_device_count(NULL), SUANLI_ERROR_NULL_POINTER, "count");
    suanli_device_info info;
    EXPECT(suanli_device_describe(0, &info), SUANLI_OK, "");
    CHECK(strlen(info.name) > 0 && strlen(info.spec) > 0, "adapter 0 has a name and a spec");
    EXPECT(suanli_device_describe(count + 5, &info), SUANLI_ERROR_INVALID_ARGUMENT, "adapter index below");

    suanli_device *dev = NULL;
    EXPECT(suanli_device_open("no-such-adapter-xyz:9", &dev), SUANLI_ERROR_DEVICE_SPEC, "no-such");
    CHECK(dev == NULL, "no device on failure");
    EXPECT(suanli_device_open(NULL, &dev), SUANLI_ERROR_NULL_POINTER, "spec");
    EXPECT(suanli_device_open("auto", &dev), SUANLI_OK, "");
    char name[64];
    EXPECT(suanli_device_name(dev, name, sizeof name), SUANLI_OK, "");
    CHECK(strlen(name) > 0, "device name");

    /* Tensors: a ragged matmul against the CPU. */
    enum { M = 37, K = 29, N = 13 };
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N), *c = malloc(sizeof(float) * M * N);
    for (int i = 0; i < M * K; i++) a[i] = (float)((i * 7919) % 101) / 50.0f - 1.0f;
    for (int i = 0; i < K * N; i++) b[i] = (float)((i * 104729) % 97) / 48.0f - 1.0f;
    size_t sa[2] = {M, K}, sb[2] = {K, N};
    suanli_tensor *ta = NULL, *tb = NULL, *tc = NULL;
    EXPECT(suanli_tensor_from_data(dev, a, M * K, sa, 2, &ta), SUANLI_OK, "");
    EXPECT(suanli_tensor_from_data(dev, b, K * N, sb, 2, &tb), SUANLI_OK, "");
    EXPECT(suanli_tensor_from_data(dev, a, M * K - 1, sa, 2, &tc), SUANLI_ERROR_SHAPE_MISMATCH, "elements");
    EXPECT(suanli_matmul(ta, tb, SUANLI_NN, &tc), SUANLI_OK, "");
    size_t shape[4], ndim = 0;
    EXPECT(suanli_tensor_shape(tc, shape, 4, &ndim), SUANLI_OK, "");
    CHECK(ndim == 2 && shape[0] == M && shape[1] == N, "c is %zu-D", ndim);
    EXPECT(suanli_tensor_shape(tc, shape, 1, &ndim), SUANLI_ERROR_SHAPE_MISMATCH, "room for 2");
    for (int i = 0; i < M * N; i++) c[i] = NAN; /* poisoned */
    EXPECT(suanli_tensor_download(tc, c, M * N - 1), SUANLI_ERROR_SHAPE_MISMATCH, "room for");
    CHECK(isnan(c[0]), "nothing written into a buffer too small");
    EXPECT(suanli_tensor_download(tc, c, M * N), SUANLI_OK, "");
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += (double)a[i * K + k] * b[k * N + j];
            double d = fabs(s - c[i * N + j]);
            if (d > worst) worst = d;
        }
    CHECK(worst < 1e-4, "matmul worst error %g", worst);
    EXPECT(suanli_matmul(ta, ta, SUANLI_NN, &tc), SUANLI_ERROR_SHAPE_MISMATCH, "matmul");
    EXPECT(suanli_matmul(NULL, tb, SUANLI_NN, &tc), SUANLI_ERROR_NULL_POINTER, "a");
    EXPECT(suanli_matmul(ta, tb, 7, &tc), SUANLI_ERROR_INVALID_ARGUMENT, "layout");
    /* An activation and a softmax, against the CPU. */
    suanli_tensor *tr = NULL;
    EXPECT(suanli_activation_apply(tb, SUANLI_TANH, &tr), SUANLI_OK, "");
    float *th = malloc(sizeof(float) * K * N);
    EXPECT(suanli_tensor_download(tr, th, K * N), SUANLI_OK, "");
    for (int i = 0; i < K * N; i++) CHECK(fabsf(th[i] - tanhf(b[i])) < 1e-6f, "tanh at %d", i);
    suanli_tensor_release(tr);
    EXPECT(suanli_softmax(tb, &tr), SUANLI_OK, "");
    EXPECT(suanli_tensor_download(tr, th, K * N), SUANLI_OK, "");
    for (int i = 0; i < K; i++) {
        double s = 0;
        for (int j = 0; j < N; j++) s += th[i * N + j];
        CHECK(fabs(s - 1) < 1e-5, "softmax row %d sums to %g", i, s);
    }
    suanli_tensor_release(tr);
    free(th);
    suanli_tensor_release(tc);

    /* A WGSL SAXPY on 1,000,003 elements against the CPU. */
    enum { L = 1000003 };
    float *x = malloc(sizeof(float) * L), *y = malloc(sizeof(float) * L), *r = malloc(sizeof(float) * L);
    for (int i = 0; i < L; i++) { x[i] = (float)(i % 1000) * 0.001f; y[i] = (float)(i % 7); }
    size_t sl[1] = {L};
    suanli_tensor *tx = NULL, *ty = NULL;
    EXPECT(suanli_tensor_from_data(dev, x, L, sl, 1, &tx), SUANLI_OK, "");
    EXPECT(suanli_tensor_from_data(dev, y, L, sl, 1, &ty), SUANLI_OK, "");
    suanli_kernel *k = NULL;
    EXPECT(suanli_kernel_compile(dev, "fn broken( {", "main", &k), SUANLI_ERROR_SHADER, ":1:");
    CHECK(k == NULL, "no kernel after a WGSL error");
    EXPECT(suanli_kernel_compile(dev, SAXPY, "saxpy", &k), SUANLI_OK, "");
    struct { uint32_t n; float a; } p = {L, 2.5f};
    const suanli_tensor *args[2] = {tx, ty};
    EXPECT(suanli_kernel_launch(k, args, 2, (const uint8_t *)&p, sizeof p, L, 0, 0), SUANLI_OK, "");
    EXPECT(suanli_kernel_launch(k, args, 1, (const uint8_t *)&p, sizeof p, L, 0, 0), SUANLI_ERROR_BINDING_MISMATCH, "");
    EXPECT(suanli_tensor_download(ty, r, L), SUANLI_OK, "");
    int bad = 0;
    for (int i = 0; i < L; i++)
        if (fabsf(r[i] - (2.5f * x[i] + y[i])) > 1e-5f) bad++;
    CHECK(bad == 0, "saxpy: %d wrong of %d", bad, L);

    /* A batch: SAXPY three times in one submission (y += 2.5x each time), the kernel handle
     * released before the submission; a launch that does not fit its kernel fails the
     * submission, naming it, and submits nothing. */
    suanli_batch *batch = NULL;
    EXPECT(suanli_batch_new(NULL, &batch), SUANLI_ERROR_NULL_POINTER, "device");
    EXPECT(suanli_batch_new(dev, &batch), SUANLI_OK, "");
    for (int i = 0; i < 3; i++)
        EXPECT(suanli_batch_launch(batch, k, args, 2, (const uint8_t *)&p, sizeof p, L, 0, 0), SUANLI_OK, "");
    size_t pending = 0;
    EXPECT(suanli_batch_len(batch, &pending), SUANLI_OK, "");
    CHECK(pending == 3, "3 launches pending, found %zu", pending);
    suanli_kernel_release(k);
    EXPECT(suanli_batch_submit(batch), SUANLI_OK, "");
    EXPECT(suanli_tensor_download(ty, r, L), SUANLI_OK, "");
    bad = 0;
    for (int i = 0; i < L; i++)
        if (fabsf(r[i] - (4.0f * 2.5f * x[i] + y[i])) > 1e-4f * (1.0f + fabsf(r[i]))) bad++;
    CHECK(bad == 0, "batched saxpy: %d wrong of %d", bad, L);
    EXPECT(suanli_kernel_compile(dev, SAXPY, "saxpy", &k), SUANLI_OK, "");
    EXPECT(suanli_batch_launch(batch, k, args, 2, (const uint8_t *)&p, sizeof p, L, 0, 0), SUANLI_OK, "");
    EXPECT(suanli_batch_launch(batch, k, args, 1, (const uint8_t *)&p, sizeof p, L, 0, 0), SUANLI_OK, "");
    EXPECT(suanli_batch_submit(batch), SUANLI_ERROR_BINDING_MISMATCH, "launch 1 of the batch");
    EXPECT(suanli_tensor_download(ty, r, L), SUANLI_OK, "");
    CHECK(fabsf(r[5] - (4.0f * 2.5f * x[5] + y[5])) < 1e-4f, "nothing submitted after a bad launch");
    EXPECT(suanli_batch_len(batch, &pending), SUANLI_OK, "");
    CHECK(pending == 0, "the batch is empty after a submission, found %zu", pending);
    EXPECT(suanli_batch_submit(NULL), SUANLI_ERROR_NULL_POINTER, "batch");
    suanli_batch_release(batch);
    suanli_batch_release(NULL);
    suanli_kernel_release(k);
    suanli_tensor_release(tx);
    suanli_tensor_release(ty);

    /* linear: relu(a·b + bias) against the CPU, and without a bias. */
    {
        float bias[N];
        for (int j = 0; j < N; j++) bias[j] = 0.1f * (float)(j % 5) - 0.2f;
        size_t sbias[1] = {N};
        suanli_tensor *tbias = NULL, *ty2 = NULL;
        EXPECT(suanli_tensor_from_data(dev, bias, N, sbias, 1, &tbias), SUANLI_OK, "");
        EXPECT(suanli_linear(ta, tb, tbias, SUANLI_RELU, &ty2), SUANLI_OK, "");
        EXPECT(suanli_tensor_download(ty2, c, M * N), SUANLI_OK, "");
        double worst = 0;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = bias[j];
                for (int q = 0; q < K; q++) s += (double)a[i * K + q] * b[q * N + j];
                s = s > 0 ? s : 0;
                worst = fmax(worst, fabs(c[i * N + j] - s));
            }
        CHECK(worst < 1e-4, "linear worst error %g", worst);
        suanli_tensor_release(ty2);
        ty2 = NULL;
        EXPECT(suanli_linear(ta, tb, NULL, 9, &ty2), SUANLI_ERROR_INVALID_ARGUMENT, "SUANLI_LINEAR");
        EXPECT(suanli_linear(ta, ta, NULL, SUANLI_LINEAR, &ty2), SUANLI_ERROR_SHAPE_MISMATCH, "");
        CHECK(ty2 == NULL, "no tensor after a failure");
        suanli_tensor_release(tbias);
    }

    /* Telemetry: a reading of adapter 0 (a software adapter exposes nothing: NaN and -1),
     * and an index past the last refused. */
    {
        suanli_reading rd;
        EXPECT(suanli_telemetry_read(0, &rd), SUANLI_OK, "");
        CHECK(strlen(rd.source) > 0, "a reading names its source");
        CHECK(rd.throttled >= -1 && rd.throttled <= 1, "throttled is -1, 0 or 1: %d", rd.throttled);
        CHECK(isnan(rd.utilisation) || (rd.utilisation >= 0 && rd.utilisation <= 100), "utilisation %g", rd.utilisation);
        EXPECT(suanli_telemetry_read(count, &rd), SUANLI_ERROR_INVALID_ARGUMENT, "adapter index");
        EXPECT(suanli_telemetry_read(0, NULL), SUANLI_ERROR_NULL_POINTER, "reading");
    }

    /* Models: a file that is not one, and a missing one. */
    suanli_model *m = NULL;
    EXPECT(suanli_model_load(dev, "/nonexistent/model.safetensors", &m), SUANLI_ERROR_IO, "nonexistent");
    FILE *f = fopen("not_a_model.safetensors", "wb");
    fputs("not a model", f);
    fclose(f);
    EXPECT(suanli_model_load(dev, "not_a_model.safetensors", &m), SUANLI_ERROR_MALFORMED, "not_a_model");
    remove("not_a_model.safetensors");
    CHECK(m == NULL, "no model after a failure");

    /* A graph from Keras's functional config: a residual connection; then a config naming a
     * layer that is not in it. */
    const char *graph =
        "{\"class_name\": \"Functional\", \"config\": {\"name\": \"res\", \"layers\": ["
        "{\"class_name\": \"InputLayer\", \"name\": \"x\", \"config\": {\"batch_input_shape\": [null, 4]}, \"inbound_nodes\": []},"
        "{\"class_name\": \"Dense\", \"name\": \"h\", \"config\": {\"units\": 4, \"activation\": \"relu\"}, \"inbound_nodes\": [[[\"x\", 0, 0, {}]]]},"
        "{\"class_name\": \"Add\", \"name\": \"s\", \"config\": {}, \"inbound_nodes\": [[[\"x\", 0, 0, {}], [\"h\", 0, 0, {}]]]},"
        "{\"class_name\": \"Dense\", \"name\": \"y\", \"config\": {\"units\": 3}, \"inbound_nodes\": [[[\"s\", 0, 0, {}]]]}],"
        "\"input_layers\": [[\"x\", 0, 0]], \"output_layers\": [[\"y\", 0, 0]]}}";
    EXPECT(suanli_model_from_config(dev, graph, 7, &m), SUANLI_OK, "");
    size_t in_dim = 0, out_dim = 0;
    EXPECT(suanli_model_dims(m, &in_dim, &out_dim), SUANLI_OK, "");
    /* The precision policy by its Keras name; another name is refused and changes nothing. */
    const char *policy = NULL;
    EXPECT(suanli_model_precision_policy(m, &policy), SUANLI_OK, "");
    CHECK(policy && strcmp(policy, "float32") == 0, "default policy %s", policy ? policy : "(null)");
    EXPECT(suanli_model_set_precision_policy(m, "mixed_float16"), SUANLI_OK, "");
    EXPECT(suanli_model_set_precision_policy(m, "mixed_bfloat16"), SUANLI_ERROR_INVALID_ARGUMENT, "mixed_float16");
    EXPECT(suanli_model_set_precision_policy(m, NULL), SUANLI_ERROR_NULL_POINTER, "policy");
    EXPECT(suanli_model_precision_policy(m, &policy), SUANLI_OK, "");
    CHECK(policy && strcmp(policy, "mixed_float16") == 0, "policy after setting %s", policy ? policy : "(null)");
    CHECK(in_dim == 4 && out_dim == 3, "graph dims %zu -> %zu", in_dim, out_dim);
    suanli_model_release(m);
    m = NULL;
    char bad_graph[2048];
    snprintf(bad_graph, sizeof bad_graph, "%s", graph);
    char *at = strstr(bad_graph, "[[[\"s\"");
    if (at) memcpy(at + 4, "q", 1);
    EXPECT(suanli_model_from_config(dev, bad_graph, 7, &m), SUANLI_ERROR_INVALID_ARGUMENT, "\"q\", which is not");
    CHECK(m == NULL, "no model after a failure");
    EXPECT(suanli_model_from_config(dev, NULL, 7, &m), SUANLI_ERROR_NULL_POINTER, "config_json");

    /* A planted leak (SUANLI_C_TEST_LEAK set): a tensor never released, which the leak check
     * (tests/asan_check.sh) must report. */
    if (getenv("SUANLI_C_TEST_LEAK")) {
        suanli_tensor *leaked = NULL;
        size_t s4[1] = {4};
        EXPECT(suanli_tensor_zeros(dev, s4, 1, &leaked), SUANLI_OK, "");
    }

    /* Releasing NULL is harmless. */
    suanli_tensor_release(NULL);
    suanli_kernel_release(NULL);
    suanli_model_release(NULL);
    suanli_tensor_release(ta);
    suanli_tensor_release(tb);
    suanli_device_release(dev);
    free(a); free(b); free(c); free(x); free(y); free(r);
    printf("test_api: %s (%d failure%s)\n", failures ? "FAILED" : "ok", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
