// The C++ wrapper: RAII handles, exceptions with status and message, training a small MLP
// from C++ with a progress callback (the loss falls, accuracy rises, stopping works), and a
// graph of two inputs and two outputs through the *_multi methods.
#include "suanli.hpp"

#include <cmath>
#include <cstdio>
#include <vector>

static int failures = 0;
#define CHECK(cond, what)                                                      \
    do {                                                                       \
        if (!(cond)) {                                                         \
            std::fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, what); \
            failures++;                                                        \
        }                                                                      \
    } while (0)

int main() {
    suanli::Device dev("auto");
    CHECK(!dev.name().empty(), "device name");
    try {
        suanli::Device bad("no-such-adapter-xyz:9");
        CHECK(false, "a bad spec throws");
    } catch (const suanli::Error &e) {
        CHECK(e.status() == SUANLI_ERROR_DEVICE_SPEC, "status of a bad spec");
        CHECK(std::string(e.what()).find("no-such") != std::string::npos, "message names the spec");
    }
    // Two blobs of points, one class each.
    const std::size_t n = 256;
    std::vector<float> x(n * 2);
    std::vector<std::uint32_t> y(n);
    for (std::size_t i = 0; i < n; i++) {
        y[i] = static_cast<std::uint32_t>(i % 2);
        double a = 0.1 * static_cast<double>(i);
        x[2 * i] = static_cast<float>((y[i] ? 1.5 : -1.5) + 0.4 * std::sin(a));
        x[2 * i + 1] = static_cast<float>((y[i] ? -1.0 : 1.0) + 0.4 * std::cos(1.7 * a));
    }
    suanli::Model m(dev, {2}, 3);
    m.add(R"({"class_name": "Dense", "config": {"units": 8, "activation": "tanh"}})")
        .add(R"({"class_name": "Dense", "config": {"units": 2, "activation": "softmax"}})");
    try {
        m.add(R"({"class_name": "Dense", "config": {"unitz": 3}})");
        CHECK(false, "an unknown argument throws");
    } catch (const suanli::Error &e) {
        CHECK(e.status() == SUANLI_ERROR_INVALID_ARGUMENT, "status of an unknown argument");
    }
    m.compile(SUANLI_ADAM, 0.05, SUANLI_SPARSE_CATEGORICAL_CROSSENTROPY);
    std::vector<double> epoch_losses;
    double last = m.fit(x, y, 5, 32, 7, [&](unsigned, unsigned, unsigned step, unsigned steps, double loss, double) {
        if (step == steps) epoch_losses.push_back(loss);
        return true;
    });
    CHECK(epoch_losses.size() == 5, "one report per epoch end");
    CHECK(epoch_losses.back() == last && last < epoch_losses.front(), "the loss falls");
    auto [loss, acc] = m.evaluate(x, y);
    CHECK(acc > 0.95 && std::isfinite(loss), "the blobs are learned");
    // Under mixed_float16 (float16 operands, float32 master weights, loss scaling) too.
    suanli::Model mixed(dev, {2}, 3);
    mixed.add(R"({"class_name": "Dense", "config": {"units": 8, "activation": "tanh"}})")
        .add(R"({"class_name": "Dense", "config": {"units": 2, "activation": "softmax"}})");
    mixed.set_precision_policy("mixed_float16");
    CHECK(mixed.precision_policy() == "mixed_float16", "the policy reads back");
    try {
        mixed.set_precision_policy("mixed_bfloat16");
        CHECK(false, "an unknown policy throws");
    } catch (const suanli::Error &e) {
        CHECK(e.status() == SUANLI_ERROR_INVALID_ARGUMENT, "status of an unknown policy");
    }
    mixed.compile(SUANLI_ADAM, 0.05, SUANLI_SPARSE_CATEGORICAL_CROSSENTROPY);
    mixed.fit(x, y, 5, 32, 7);
    auto [mloss, macc] = mixed.evaluate(x, y);
    CHECK(macc > 0.95 && std::isfinite(mloss), "the blobs are learned in mixed precision");
    auto p = m.predict(x, n);
    CHECK(p.size() == n * 2 && std::fabs(p[0] + p[1] - 1.0f) < 1e-5f, "predict gives probabilities");
    // A callback that stops training: fit throws SUANLI_ERROR_INTERRUPTED.
    try {
        m.fit(x, y, 5, 32, 7, [](unsigned, unsigned, unsigned, unsigned, double, double) { return false; });
        CHECK(false, "stopping throws");
    } catch (const suanli::Error &e) {
        CHECK(e.status() == SUANLI_ERROR_INTERRUPTED, "status of a stopped fit");
    }
    // Two inputs (the blobs' x and a copy of its first column), two outputs: the class and
    // the blob's x again as a regression target.
    const char *graph = R"({"class_name": "Functional", "config": {"layers": [
        {"class_name": "InputLayer", "name": "p", "config": {"batch_input_shape": [null, 2]}, "inbound_nodes": []},
        {"class_name": "InputLayer", "name": "q", "config": {"batch_input_shape": [null, 1]}, "inbound_nodes": []},
        {"class_name": "Concatenate", "name": "pq", "config": {"axis": -1}, "inbound_nodes": [[["p", 0, 0, {}], ["q", 0, 0, {}]]]},
        {"class_name": "Dense", "name": "h", "config": {"units": 8, "activation": "tanh"}, "inbound_nodes": [[["pq", 0, 0, {}]]]},
        {"class_name": "Dense", "name": "cls", "config": {"units": 2, "activation": "softmax"}, "inbound_nodes": [[["h", 0, 0, {}]]]},
        {"class_name": "Dense", "name": "reg", "config": {"units": 2}, "inbound_nodes": [[["h", 0, 0, {}]]]}],
        "input_layers": [["p", 0, 0], ["q", 0, 0]], "output_layers": [["cls", 0, 0], ["reg", 0, 0]]}})";
    auto g = suanli::Model::from_config(dev, graph, 5);
    CHECK(g.counts() == std::make_pair(std::size_t{2}, std::size_t{2}), "two inputs, two outputs");
    CHECK(g.input_size(1) == 1 && g.output_size(1) == 2, "sizes of input 1 and output 1");
    g.compile_outputs(SUANLI_ADAM, 0.05, {SUANLI_SPARSE_CATEGORICAL_CROSSENTROPY, SUANLI_MEAN_SQUARED_ERROR}, {1.0f, 0.5f});
    std::vector<float> q(n);
    for (std::size_t i = 0; i < n; i++) q[i] = x[2 * i];
    auto e0 = g.evaluate_multi({x, q}, {y, x}, n);
    double fitted = g.fit_multi({x, q}, {y, x}, n, 5, 32, 7);
    auto e1 = g.evaluate_multi({x, q}, {y, x}, n);
    CHECK(std::isfinite(fitted) && e1.loss < e0.loss, "the graph's loss falls");
    CHECK(e1.losses.size() == 2 && e1.accuracies[0] > 0.9 && std::isnan(e1.accuracies[1]), "per-output loss and accuracy");
    auto outs = g.predict_multi({x, q}, n);
    CHECK(outs.size() == 2 && outs[0].size() == n * 2 && outs[1].size() == n * 2, "an array per output");
    try {
        g.fit_multi({x, q}, {x, x}, n, 1, 32);  // values where the classes' loss wants labels
        CHECK(false, "targets of the wrong kind throw");
    } catch (const suanli::Error &e) {
        CHECK(e.status() == SUANLI_ERROR_NULL_POINTER && std::string(e.what()).find("labels[0]") != std::string::npos, "the message names labels[0]");
    }
    // RAII: moved-from handles release nothing twice.
    suanli::Tensor a(dev, std::vector<float>{1, 2, 3, 4}, {2, 2});
    suanli::Tensor b = std::move(a);
    auto c = b.matmul(b).to_vector();
    CHECK(c.size() == 4 && c[0] == 7 && c[3] == 22, "matmul through the wrapper");
    std::printf("test_cpp: %s (%d failure%s)\n", failures ? "FAILED" : "ok", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
