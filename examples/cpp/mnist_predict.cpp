// Loads a model file written by Rust (`mnist_mlp --save PATH`, `mnist_cnn --save PATH`) or
// Python (`model.save`) and prints its MNIST test accuracy and loss, the line Rust's example
// prints, to every digit: the same file, the same images, the same batches of 1000.
//
//   mnist_predict MODEL [MNIST_DIR] [--bench N]
//
// It also prints a digest (FNV-1a) of the predictions' bits: two model files give the same
// digest only if they compute the same outputs to the bit.
// With --bench N it also times `predict` on the 10,000 test images N times and prints the
// median (the C++ side of docs/C.md's overhead comparison).
#include "mnist_idx.hpp"
#include "suanli.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: mnist_predict MODEL [MNIST_DIR] [--bench N]\n");
        return 2;
    }
    const char *folder = nullptr;
    int bench = 0;
    for (int i = 2; i < argc; i++) {
        if (!std::strcmp(argv[i], "--bench") && i + 1 < argc) bench = std::atoi(argv[++i]);
        else folder = argv[i];
    }
    try {
        suanli::Device dev("auto");
        auto model = suanli::Model::load(dev, argv[1]);
        // The loss to evaluate with (a weights file carries none; a checkpoint's is the
        // same): sparse categorical cross-entropy on the softmax output, as Rust's example.
        model.compile(SUANLI_ADAM, 0.001, SUANLI_SPARSE_CATEGORICAL_CROSSENTROPY);
        auto test = mnist::load(mnist::dir(folder), "t10k");
        auto x = mnist::floats(test, test.rows);
        auto [loss, acc] = model.evaluate({x.data(), x.size()}, {test.labels.data(), test.labels.size()}, 1000);
        std::printf("Device: %s\n", dev.name().c_str());
        std::printf("Test accuracy: %.4f (loss %.4f)\n", acc, loss);
        auto y = model.predict({x.data(), x.size()}, test.rows);
        std::size_t right = 0;
        for (std::size_t r = 0; r < test.rows; r++) {
            auto row = y.begin() + r * 10;
            right += std::size_t(std::max_element(row, row + 10) - row) == test.labels[r];
        }
        std::printf("predict: %zu of %zu right\n", right, test.rows);
        std::uint64_t h = 1469598103934665603ull;
        for (float v : y) {
            std::uint32_t b;
            std::memcpy(&b, &v, sizeof b);
            for (int i = 0; i < 4; i++) h = (h ^ ((b >> (8 * i)) & 0xff)) * 1099511628211ull;
        }
        std::printf("predictions digest: %016llx\n", static_cast<unsigned long long>(h));
        if (bench > 0) {
            std::vector<double> ms;
            for (int i = 0; i < bench; i++) {
                auto t0 = std::chrono::steady_clock::now();
                auto out = model.predict({x.data(), x.size()}, test.rows);
                ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
            }
            std::sort(ms.begin(), ms.end());
            std::printf("predict 10000 images: median %.2f ms over %d runs\n", ms[ms.size() / 2], bench);
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "mnist_predict: %s\n", e.what());
        return 1;
    }
    return 0;
}
