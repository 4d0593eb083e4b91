// The C++ wrapper: RAII handles, exceptions with status and message, and training a small
// MLP from C++ with a progress callback (the loss falls, accuracy rises, stopping works).
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
    auto p = m.predict(x, n);
    CHECK(p.size() == n * 2 && std::fabs(p[0] + p[1] - 1.0f) < 1e-5f, "predict gives probabilities");
    // A callback that stops training: fit throws SUANLI_ERROR_INTERRUPTED.
    try {
        m.fit(x, y, 5, 32, 7, [](unsigned, unsigned, unsigned, unsigned, double, double) { return false; });
        CHECK(false, "stopping throws");
    } catch (const suanli::Error &e) {
        CHECK(e.status() == SUANLI_ERROR_INTERRUPTED, "status of a stopped fit");
    }
    // RAII: moved-from handles release nothing twice.
    suanli::Tensor a(dev, std::vector<float>{1, 2, 3, 4}, {2, 2});
    suanli::Tensor b = std::move(a);
    auto c = b.matmul(b).to_vector();
    CHECK(c.size() == 4 && c[0] == 7 && c[3] == 22, "matmul through the wrapper");
    std::printf("test_cpp: %s (%d failure%s)\n", failures ? "FAILED" : "ok", failures, failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
