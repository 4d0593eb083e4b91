/* A model of two inputs and two outputs from C: built from Keras's functional config JSON
 * (suanli_model_from_config), compiled with a loss and a weight per output, trained,
 * evaluated and predicted with an array per input and a target column per output. The
 * loss falls, the total is the weighted sum of the outputs' losses, the outputs are finite,
 * shaped as the model says and the same row by row however many rows are predicted, a
 * saved and loaded model predicts the same; every mismatch (counts, NULL pointers, labels
 * where values belong, room too small) is a typed status with a message naming it, and the
 * model is still usable after each. */
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

/* a(4) → Dense(8, relu); b(3) → Dense(8, tanh); Concatenate → cls: Dense(3, softmax),
 * reg: Dense(2). */
static const char *GRAPH =
    "{\"class_name\": \"Functional\", \"config\": {\"name\": \"two_by_two\", \"layers\": ["
    "{\"class_name\": \"InputLayer\", \"name\": \"a\", \"config\": {\"batch_input_shape\": [null, 4]}, \"inbound_nodes\": []},"
    "{\"class_name\": \"InputLayer\", \"name\": \"b\", \"config\": {\"batch_input_shape\": [null, 3]}, \"inbound_nodes\": []},"
    "{\"class_name\": \"Dense\", \"name\": \"ha\", \"config\": {\"units\": 8, \"activation\": \"relu\"}, \"inbound_nodes\": [[[\"a\", 0, 0, {}]]]},"
    "{\"class_name\": \"Dense\", \"name\": \"hb\", \"config\": {\"units\": 8, \"activation\": \"tanh\"}, \"inbound_nodes\": [[[\"b\", 0, 0, {}]]]},"
    "{\"class_name\": \"Concatenate\", \"name\": \"h\", \"config\": {\"axis\": -1}, \"inbound_nodes\": [[[\"ha\", 0, 0, {}], [\"hb\", 0, 0, {}]]]},"
    "{\"class_name\": \"Dense\", \"name\": \"cls\", \"config\": {\"units\": 3, \"activation\": \"softmax\"}, \"inbound_nodes\": [[[\"h\", 0, 0, {}]]]},"
    "{\"class_name\": \"Dense\", \"name\": \"reg\", \"config\": {\"units\": 2}, \"inbound_nodes\": [[[\"h\", 0, 0, {}]]]}],"
    "\"input_layers\": [[\"a\", 0, 0], [\"b\", 0, 0]], \"output_layers\": [[\"cls\", 0, 0], [\"reg\", 0, 0]]}}";

enum { ROWS = 120, A = 4, B = 3, C = 3, R = 2 };

static float xa[ROWS * A], xb[ROWS * B], reg[ROWS * R];
static uint32_t cls[ROWS];

/* A deterministic value in [-1, 1). */
static float draw(unsigned *state) {
    *state = *state * 1664525u + 1013904223u;
    return (float)(*state >> 8) / (float)(1u << 23) - 1.0f;
}

static void make_data(void) {
    unsigned s = 12345u;
    for (int i = 0; i < ROWS; i++) {
        for (int j = 0; j < A; j++) xa[i * A + j] = draw(&s);
        for (int j = 0; j < B; j++) xb[i * B + j] = draw(&s);
        float v[3] = {xa[i * A], xa[i * A + 1], xb[i * B]};
        cls[i] = v[0] > v[1] ? (v[0] > v[2] ? 0u : 2u) : (v[1] > v[2] ? 1u : 2u);
        reg[i * R] = xa[i * A + 2] - 0.5f * xb[i * B + 1];
        reg[i * R + 1] = 0.3f * xa[i * A + 3] + 0.2f * xb[i * B + 2];
    }
}

static int epochs_seen = 0;

static int32_t on_progress(void *user, uint32_t epoch, uint32_t epochs, uint32_t step, uint32_t steps, double loss, double acc) {
    (void)user; (void)epoch; (void)epochs; (void)acc;
    if (step == steps && isfinite(loss)) epochs_seen++;
    return 0;
}

int main(void) {
    make_data();
    suanli_device *dev = NULL;
    EXPECT(suanli_device_open("auto", &dev), SUANLI_OK, "");
    suanli_model *m = NULL;
    EXPECT(suanli_model_from_config(dev, GRAPH, 7, &m), SUANLI_OK, "");
    if (!m) return 1;

    /* The model's counts and sizes. */
    size_t ni = 0, no = 0, si = 0, so = 0;
    EXPECT(suanli_model_counts(m, &ni, &no), SUANLI_OK, "");
    CHECK(ni == 2 && no == 2, "counts %zu, %zu", ni, no);
    EXPECT(suanli_model_sizes(m, 0, 0, &si, &so), SUANLI_OK, "");
    CHECK(si == A && so == C, "sizes of input 0 and output 0: %zu, %zu", si, so);
    EXPECT(suanli_model_sizes(m, 1, 1, &si, &so), SUANLI_OK, "");
    CHECK(si == B && so == R, "sizes of input 1 and output 1: %zu, %zu", si, so);
    EXPECT(suanli_model_sizes(m, 2, 0, &si, &so), SUANLI_ERROR_INVALID_ARGUMENT, "an input below 2");
    EXPECT(suanli_model_counts(NULL, &ni, &no), SUANLI_ERROR_NULL_POINTER, "model");

    const float *inputs[2] = {xa, xb};
    const uint32_t *labels[2] = {cls, NULL};
    const float *targets[2] = {NULL, reg};

    /* Not compiled yet: the losses say what the targets are. */
    EXPECT(suanli_model_fit_multi(m, inputs, 2, labels, targets, 2, ROWS, 1, 16, 0, NULL, NULL, NULL),
           SUANLI_ERROR_INVALID_ARGUMENT, "a compiled model");

    /* Compile: a loss and a weight per output. */
    uint32_t losses[3] = {SUANLI_SPARSE_CATEGORICAL_CROSSENTROPY, SUANLI_MEAN_SQUARED_ERROR, SUANLI_MEAN_SQUARED_ERROR};
    float weights[2] = {1.0f, 0.5f}, bad_weights[2] = {1.0f, -1.0f};
    uint32_t bad_losses[2] = {SUANLI_SPARSE_CATEGORICAL_CROSSENTROPY, 9};
    EXPECT(suanli_model_compile_outputs(m, SUANLI_ADAM, 0.01, NULL, weights, 2), SUANLI_ERROR_NULL_POINTER, "losses");
    EXPECT(suanli_model_compile_outputs(m, SUANLI_ADAM, 0.01, bad_losses, weights, 2), SUANLI_ERROR_INVALID_ARGUMENT, "losses[1]");
    EXPECT(suanli_model_compile_outputs(m, SUANLI_ADAM, 0.01, losses, NULL, 3), SUANLI_ERROR_INVALID_ARGUMENT, "one per output");
    EXPECT(suanli_model_compile_outputs(m, SUANLI_ADAM, 0.01, losses, bad_weights, 2), SUANLI_ERROR_INVALID_ARGUMENT, "loss_weights");
    EXPECT(suanli_model_compile_outputs(m, 7, 0.01, losses, weights, 2), SUANLI_ERROR_INVALID_ARGUMENT, "optimizer");
    EXPECT(suanli_model_compile_outputs(m, SUANLI_ADAM, 0.01, losses, weights, 2), SUANLI_OK, "");

    /* Before training: the total is Σ weight · loss. */
    double before = NAN, per[2] = {NAN, NAN}, acc[2] = {NAN, NAN};
    EXPECT(suanli_model_evaluate_multi(m, inputs, 2, labels, targets, 2, ROWS, 0, &before, per, acc), SUANLI_OK, "");
    CHECK(fabs(before - (per[0] + 0.5 * per[1])) <= 1e-5 * fabs(before), "total %g vs %g + 0.5 · %g", before, per[0], per[1]);
    CHECK(acc[0] >= 0 && acc[0] <= 1 && isnan(acc[1]), "accuracies %g, %g", acc[0], acc[1]);

    /* Train: the loss falls on both outputs. */
    double fitted = NAN;
    EXPECT(suanli_model_fit_multi(m, inputs, 2, labels, targets, 2, ROWS, 12, 16, 3, on_progress, NULL, &fitted), SUANLI_OK, "");
    CHECK(epochs_seen == 12 && isfinite(fitted), "%d epochs reported, last loss %g", epochs_seen, fitted);
    double after = NAN, per2[2] = {NAN, NAN};
    EXPECT(suanli_model_evaluate_multi(m, inputs, 2, labels, targets, 2, ROWS, 40, &after, per2, NULL), SUANLI_OK, "");
    CHECK(after < 0.8 * before, "loss %g after training, %g before", after, before);
    CHECK(per2[0] < per[0] && per2[1] < per[1], "each output's loss falls: %g < %g, %g < %g", per2[0], per[0], per2[1], per[1]);

    /* Predict: poisoned outputs come back finite, probabilities for cls; ten rows predicted
     * alone are the first ten of all. */
    float *pc = malloc(sizeof(float) * ROWS * C), *pr = malloc(sizeof(float) * ROWS * R);
    float *qc = malloc(sizeof(float) * ROWS * C), *qr = malloc(sizeof(float) * ROWS * R);
    for (int i = 0; i < ROWS * C; i++) pc[i] = qc[i] = NAN;
    for (int i = 0; i < ROWS * R; i++) pr[i] = qr[i] = NAN;
    float *outputs[2] = {pc, pr}, *again[2] = {qc, qr};
    size_t caps[2] = {ROWS * C, ROWS * R}, small[2] = {ROWS * C, ROWS * R - 1};
    EXPECT(suanli_model_predict_multi(m, inputs, 2, ROWS, outputs, small, 2), SUANLI_ERROR_SHAPE_MISMATCH, "outputs[1]");
    CHECK(isnan(pc[0]) && isnan(pr[0]), "nothing written when an output does not fit");
    EXPECT(suanli_model_predict_multi(m, inputs, 2, ROWS, outputs, caps, 2), SUANLI_OK, "");
    int bad = 0;
    for (int i = 0; i < ROWS; i++) {
        double s = pc[i * C] + pc[i * C + 1] + pc[i * C + 2];
        if (!(fabs(s - 1) < 1e-5) || !isfinite(pr[i * R]) || !isfinite(pr[i * R + 1])) bad++;
    }
    CHECK(bad == 0, "%d rows not probabilities or not finite", bad);
    EXPECT(suanli_model_predict_multi(m, inputs, 2, 10, again, caps, 2), SUANLI_OK, "");
    for (int i = 0; i < 10 * C; i++) CHECK(fabsf(qc[i] - pc[i]) <= 1e-6f, "cls at %d: %g vs %g", i, qc[i], pc[i]);
    for (int i = 0; i < 10 * R; i++) CHECK(fabsf(qr[i] - pr[i]) <= 1e-5f, "reg at %d: %g vs %g", i, qr[i], pr[i]);

    /* Mismatches: each a typed status naming what is wrong. */
    const float *one_null[2] = {xa, NULL};
    const uint32_t *both_labels[2] = {cls, cls};
    const float *both_targets[2] = {reg, reg};
    EXPECT(suanli_model_fit_multi(m, inputs, 1, labels, targets, 2, ROWS, 1, 16, 0, NULL, NULL, NULL),
           SUANLI_ERROR_SHAPE_MISMATCH, "expected 2 arrays");
    EXPECT(suanli_model_fit_multi(m, one_null, 2, labels, targets, 2, ROWS, 1, 16, 0, NULL, NULL, NULL),
           SUANLI_ERROR_NULL_POINTER, "inputs[1]");
    EXPECT(suanli_model_fit_multi(m, NULL, 2, labels, targets, 2, ROWS, 1, 16, 0, NULL, NULL, NULL),
           SUANLI_ERROR_NULL_POINTER, "inputs");
    EXPECT(suanli_model_fit_multi(m, inputs, 2, labels, targets, 1, ROWS, 1, 16, 0, NULL, NULL, NULL),
           SUANLI_ERROR_SHAPE_MISMATCH, "expected 2 target columns");
    EXPECT(suanli_model_evaluate_multi(m, inputs, 2, NULL, targets, 2, ROWS, 0, &after, NULL, NULL),
           SUANLI_ERROR_NULL_POINTER, "labels[0]");
    EXPECT(suanli_model_evaluate_multi(m, inputs, 2, labels, both_targets, 2, ROWS, 0, &after, NULL, NULL),
           SUANLI_ERROR_INVALID_ARGUMENT, "targets[0]: expected NULL");
    EXPECT(suanli_model_evaluate_multi(m, inputs, 2, both_labels, targets, 2, ROWS, 0, &after, NULL, NULL),
           SUANLI_ERROR_INVALID_ARGUMENT, "labels[1]: expected NULL");
    EXPECT(suanli_model_evaluate_multi(m, inputs, 2, labels, NULL, 2, ROWS, 0, &after, NULL, NULL),
           SUANLI_ERROR_NULL_POINTER, "targets[1]");
    EXPECT(suanli_model_evaluate_multi(NULL, inputs, 2, labels, targets, 2, ROWS, 0, &after, NULL, NULL),
           SUANLI_ERROR_NULL_POINTER, "model");
    cls[5] = 7; /* past the 3 classes */
    EXPECT(suanli_model_fit_multi(m, inputs, 2, labels, targets, 2, ROWS, 1, 16, 0, NULL, NULL, NULL),
           SUANLI_ERROR_INVALID_ARGUMENT, "class indices below");
    cls[5] = 0;
    EXPECT(suanli_model_predict_multi(m, inputs, 3, ROWS, outputs, caps, 2), SUANLI_ERROR_SHAPE_MISMATCH, "expected 2 arrays");
    EXPECT(suanli_model_predict_multi(m, inputs, 2, ROWS, outputs, caps, 1), SUANLI_ERROR_SHAPE_MISMATCH, "expected 2 arrays");
    EXPECT(suanli_model_predict_multi(m, inputs, 2, ROWS, NULL, caps, 2), SUANLI_ERROR_NULL_POINTER, "outputs");
    EXPECT(suanli_model_predict_multi(m, inputs, 2, ROWS, outputs, NULL, 2), SUANLI_ERROR_NULL_POINTER, "capacities");
    float *one_out[2] = {pc, NULL};
    EXPECT(suanli_model_predict_multi(m, inputs, 2, ROWS, one_out, caps, 2), SUANLI_ERROR_NULL_POINTER, "outputs[1]");
    EXPECT(suanli_model_predict_multi(m, one_null, 2, ROWS, outputs, caps, 2), SUANLI_ERROR_NULL_POINTER, "inputs[1]");
    /* The one-array functions on this model: a typed error naming the inputs. */
    size_t room = ROWS * C;
    CHECK(suanli_model_predict(m, xa, ROWS, pc, room) != SUANLI_OK, "predict with one array of two");

    /* Still usable, and unchanged by the refusals. */
    double same = NAN;
    EXPECT(suanli_model_evaluate_multi(m, inputs, 2, labels, targets, 2, ROWS, 40, &same, NULL, NULL), SUANLI_OK, "");
    CHECK(same == after, "evaluate after the refusals %g, before %g", same, after);

    /* Saved and loaded, it predicts the same. */
    EXPECT(suanli_model_save(m, "two_by_two.safetensors"), SUANLI_OK, "");
    suanli_model *loaded = NULL;
    EXPECT(suanli_model_load(dev, "two_by_two.safetensors", &loaded), SUANLI_OK, "");
    remove("two_by_two.safetensors");
    EXPECT(suanli_model_predict_multi(loaded, inputs, 2, ROWS, again, caps, 2), SUANLI_OK, "");
    for (int i = 0; i < ROWS * C; i++) CHECK(qc[i] == pc[i], "loaded cls at %d", i);
    for (int i = 0; i < ROWS * R; i++) CHECK(qr[i] == pr[i], "loaded reg at %d", i);

    suanli_model_release(loaded);
    suanli_model_release(m);
    suanli_device_release(dev);
    free(pc); free(pr); free(qc); free(qr);
    printf("test_multi: %s (%d failure%s)\n", failures ? "FAILED" : "ok", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
