// The C++ side of the C API's overhead comparison (scripts/c_overhead.sh runs it beside
// Rust's examples/c_overhead.rs, which does the same without the C layer): a 1024³ matmul,
// a small custom-kernel launch, and predict on the 10,000 MNIST test images, each timed
// --repeat times (median printed).
//
//   overhead MODEL [MNIST_DIR] [--repeat N]
#include "mnist_idx.hpp"
#include "suanli.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

static const char *TOUCH =
    "struct P { n: u32, a: f32 }\n"
    "@group(0) @binding(0) var<storage, read_write> y: array<f32>;\n"
    "@group(0) @binding(1) var<uniform> p: P;\n"
    "@compute @workgroup_size(256)\n"
    "fn touch(@builtin(global_invocation_id) g: vec3<u32>) {\n"
    "    if (g.x < p.n) { y[g.x] = y[g.x] + p.a; }\n"
    "}\n";

template <typename F> static double median_seconds(int repeat, F f) {
    f();  // warm-up: pipelines compiled, buffers pooled
    std::vector<double> v;
    for (int i = 0; i < repeat; i++) {
        auto t0 = std::chrono::steady_clock::now();
        f();
        v.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: overhead MODEL [MNIST_DIR] [--repeat N]\n");
        return 2;
    }
    const char *folder = nullptr;
    int repeat = 20;
    for (int i = 2; i < argc; i++) {
        if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = std::atoi(argv[++i]);
        else folder = argv[i];
    }
    try {
        suanli::Device dev("auto");
        const std::size_t n = 1024;
        std::vector<float> a(n * n);
        for (std::size_t i = 0; i < a.size(); i++) a[i] = float((i * 7919) % 101) / 50.0f - 1.0f;
        suanli::Tensor ta(dev, {a.data(), a.size()}, {n, n}), tb(dev, {a.data(), a.size()}, {n, n});
        double mm = median_seconds(repeat, [&] {
            auto c = ta.matmul(tb);
            dev.synchronize();
        });
        std::printf("matmul 1024^3: median %.3f ms\n", mm * 1e3);
        suanli::Kernel k(dev, TOUCH, "touch");
        auto y = suanli::Tensor::zeros(dev, {256});
        struct {
            std::uint32_t n;
            float a;
        } p = {256, 1.0f};
        const int launches = 2000;
        double per = median_seconds(std::min(repeat, 5), [&] {
            for (int i = 0; i < launches; i++) k.launch({&y}, p, 256);
            dev.synchronize();
        });
        std::printf("launch: median %.2f us per launch (%d launches of a 256-element kernel)\n", per / launches * 1e6, launches);
        auto model = suanli::Model::load(dev, argv[1]);
        auto test = mnist::load(mnist::dir(folder), "t10k");
        auto x = mnist::floats(test, test.rows);
        double pr = median_seconds(repeat, [&] { auto out = model.predict({x.data(), x.size()}, test.rows); });
        std::printf("predict %zu images: median %.2f ms\n", test.rows, pr * 1e3);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "overhead: %s\n", e.what());
        return 1;
    }
    return 0;
}
