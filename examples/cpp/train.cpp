// Trains the MNIST MLP of Rust's `mnist_mlp` example from C++ (784-128-64-10, ReLU, softmax,
// Adam at 0.001, sparse categorical cross-entropy, batch 32), printing each epoch's loss and
// accuracy from a progress callback, then the test accuracy. With the same seed and rows it
// follows Rust's loss trajectory to the bit: the same initial weights, shuffles and data.
//
//   train [--epochs N] [--train-rows N] [--seed N] [--save PATH] [MNIST_DIR]
#include "mnist_idx.hpp"
#include "suanli.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char **argv) {
    std::size_t epochs = 3, rows = 60000;
    std::uint64_t seed = 0;
    const char *folder = nullptr, *save = nullptr;
    for (int i = 1; i < argc; i++) {
        auto arg = [&](const char *name) { return !std::strcmp(argv[i], name) && i + 1 < argc; };
        if (arg("--epochs")) epochs = std::strtoul(argv[++i], nullptr, 10);
        else if (arg("--train-rows")) rows = std::strtoul(argv[++i], nullptr, 10);
        else if (arg("--seed")) seed = std::strtoull(argv[++i], nullptr, 10);
        else if (arg("--save")) save = argv[++i];
        else folder = argv[i];
    }
    try {
        suanli::Device dev("auto");
        auto train = mnist::load(mnist::dir(folder), "train");
        auto test = mnist::load(mnist::dir(folder), "t10k");
        rows = std::min(rows, train.rows);
        auto x = mnist::floats(train, rows);
        suanli::Model model(dev, {784}, seed);
        model.add(R"({"class_name": "Dense", "config": {"units": 128, "activation": "relu"}})")
            .add(R"({"class_name": "Dense", "config": {"units": 64, "activation": "relu"}})")
            .add(R"({"class_name": "Dense", "config": {"units": 10, "activation": "softmax"}})");
        model.compile(SUANLI_ADAM, 0.001, SUANLI_SPARSE_CATEGORICAL_CROSSENTROPY);
        std::printf("Device: %s\n", dev.name().c_str());
        // Called as the engine reads its running metrics, and once at each epoch's end
        // (step == steps): print that one.
        auto progress = [](unsigned e, unsigned es, unsigned s, unsigned ss, double loss, double acc) {
            if (s == ss) std::printf("Epoch %u/%u %u/%u - loss: %.4f - accuracy: %.4f\n", e + 1, es, s, ss, loss, acc);
            return true;
        };
        model.fit({x.data(), x.size()}, {train.labels.data(), rows}, epochs, 32, seed, progress);
        auto xt = mnist::floats(test, test.rows);
        auto [loss, acc] = model.evaluate({xt.data(), xt.size()}, {test.labels.data(), test.labels.size()}, 1000);
        std::printf("Test accuracy: %.4f (loss %.4f)\n", acc, loss);
        if (save) model.save(save);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "train: %s\n", e.what());
        return 1;
    }
    return 0;
}
