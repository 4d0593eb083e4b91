// suanli.hpp: a header-only C++17 wrapper of suanli.h. RAII classes that release their
// handles (Device, Tensor, Kernel, Model), suanli::Error exceptions carrying the status and
// the message, and views (pointer + size) for host data: nothing allocates behind your back
// except the std::vector a download or predict returns when you ask for one.
#ifndef SUANLI_HPP
#define SUANLI_HPP

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "suanli.h"

namespace suanli {

/// A failed call: its status and suanli's message (what was expected and found).
class Error : public std::runtime_error {
public:
    Error(suanli_status status, const std::string &message) : std::runtime_error(message), status_(status) {}
    suanli_status status() const noexcept { return status_; }

private:
    suanli_status status_;
};

/// Throws the calling thread's last error when `s` is not SUANLI_OK.
inline void check(suanli_status s) {
    if (s != SUANLI_OK) throw Error(s, suanli_last_error());
}

/// Host data: a pointer and a count (a span without C++20).
template <typename T> struct View {
    const T *data;
    std::size_t size;
    View(const T *d, std::size_t n) : data(d), size(n) {}
    View(const std::vector<T> &v) : data(v.data()), size(v.size()) {}  // NOLINT: implicit on purpose
};

namespace detail {
template <typename H, void (*Release)(H *)> class Handle {
public:
    Handle() = default;
    explicit Handle(H *h) : h_(h) {}
    Handle(const Handle &) = delete;
    Handle &operator=(const Handle &) = delete;
    Handle(Handle &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
    Handle &operator=(Handle &&o) noexcept {
        if (this != &o) {
            Release(h_);
            h_ = std::exchange(o.h_, nullptr);
        }
        return *this;
    }
    ~Handle() { Release(h_); }
    H *get() const noexcept { return h_; }

private:
    H *h_ = nullptr;
};
}  // namespace detail

/// An opened device ("auto", "gpu:0", "/GPU:0", "cpu", ...).
class Device {
public:
    explicit Device(const std::string &spec = "auto") {
        suanli_device *d = nullptr;
        check(suanli_device_open(spec.c_str(), &d));
        h_ = Handle(d);
    }
    std::string name() const {
        char buf[256];
        check(suanli_device_name(h_.get(), buf, sizeof buf));
        return buf;
    }
    void synchronize() const { check(suanli_device_synchronize(h_.get())); }
    suanli_device *get() const noexcept { return h_.get(); }
    static std::size_t count() {
        std::size_t n = 0;
        check(suanli_device_count(&n));
        return n;
    }
    /// One sample of adapter `index`'s sensors (NaN, UINT64_MAX or -1 where not exposed).
    static suanli_reading telemetry(std::size_t index) {
        suanli_reading r{};
        check(suanli_telemetry_read(index, &r));
        return r;
    }

private:
    using Handle = detail::Handle<suanli_device, suanli_device_release>;
    Handle h_;
};

/// A float32 tensor on a device.
class Tensor {
public:
    Tensor(const Device &dev, View<float> data, const std::vector<std::size_t> &shape) {
        suanli_tensor *t = nullptr;
        check(suanli_tensor_from_data(dev.get(), data.data, data.size, shape.data(), shape.size(), &t));
        h_ = Handle(t);
    }
    static Tensor zeros(const Device &dev, const std::vector<std::size_t> &shape) {
        suanli_tensor *t = nullptr;
        check(suanli_tensor_zeros(dev.get(), shape.data(), shape.size(), &t));
        return Tensor(t);
    }
    std::vector<std::size_t> shape() const {
        std::size_t n = 0;
        check(suanli_tensor_shape(h_.get(), nullptr, 0, &n));
        std::vector<std::size_t> s(n);
        check(suanli_tensor_shape(h_.get(), s.data(), s.size(), &n));
        return s;
    }
    std::size_t size() const {
        std::size_t n = 1;
        for (auto d : shape()) n *= d;
        return n;
    }
    /// Reads the values into `out` (room for `capacity` floats).
    void download(float *out, std::size_t capacity) const { check(suanli_tensor_download(h_.get(), out, capacity)); }
    std::vector<float> to_vector() const {
        std::vector<float> v(size());
        download(v.data(), v.size());
        return v;
    }
    Tensor matmul(const Tensor &b, suanli_layout layout = SUANLI_NN) const {
        suanli_tensor *c = nullptr;
        check(suanli_matmul(h_.get(), b.get(), layout, &c));
        return Tensor(c);
    }
    /// `act(this·w + bias)` in one fused kernel (`bias` may be null).
    Tensor linear(const Tensor &w, const Tensor *bias = nullptr, suanli_activation act = SUANLI_LINEAR) const {
        suanli_tensor *y = nullptr;
        check(suanli_linear(h_.get(), w.get(), bias ? bias->get() : nullptr, act, &y));
        return Tensor(y);
    }
    suanli_tensor *get() const noexcept { return h_.get(); }

private:
    explicit Tensor(suanli_tensor *t) : h_(t) {}
    using Handle = detail::Handle<suanli_tensor, suanli_tensor_release>;
    Handle h_;
};

/// A WGSL compute kernel compiled for a device.
class Kernel {
public:
    Kernel(const Device &dev, const std::string &wgsl, const std::string &entry) {
        suanli_kernel *k = nullptr;
        check(suanli_kernel_compile(dev.get(), wgsl.c_str(), entry.c_str(), &k));
        h_ = Handle(k);
    }
    /// Launches over `invocations` (1-D, spilling onto y past the per-dimension limit).
    template <typename U>
    void launch(const std::vector<const Tensor *> &tensors, const U &uniform, std::uint64_t invocations) const {
        std::vector<const suanli_tensor *> hs;
        hs.reserve(tensors.size());
        for (auto *t : tensors) hs.push_back(t->get());
        check(suanli_kernel_launch(h_.get(), hs.data(), hs.size(), reinterpret_cast<const std::uint8_t *>(&uniform), sizeof(U), invocations, 0, 0));
    }

    suanli_kernel *get() const noexcept { return h_.get(); }

private:
    using Handle = detail::Handle<suanli_kernel, suanli_kernel_release>;
    Handle h_;
};

/// Launches recorded together and submitted as one (`submit`): a loop of small kernels
/// costs one submission instead of one each. Not thread-safe.
class Batch {
public:
    explicit Batch(const Device &dev) {
        suanli_batch *b = nullptr;
        check(suanli_batch_new(dev.get(), &b));
        h_ = Handle(b);
    }
    template <typename U>
    Batch &launch(const Kernel &k, const std::vector<const Tensor *> &tensors, const U &uniform, std::uint64_t invocations) {
        std::vector<const suanli_tensor *> hs;
        hs.reserve(tensors.size());
        for (auto *t : tensors) hs.push_back(t->get());
        check(suanli_batch_launch(h_.get(), k.get(), hs.data(), hs.size(), reinterpret_cast<const std::uint8_t *>(&uniform), sizeof(U), invocations, 0, 0));
        return *this;
    }
    void submit() { check(suanli_batch_submit(h_.get())); }
    std::size_t size() const {
        std::size_t n = 0;
        check(suanli_batch_len(h_.get(), &n));
        return n;
    }

private:
    using Handle = detail::Handle<suanli_batch, suanli_batch_release>;
    Handle h_;
};

/// A model: built from layer specs (Keras's JSON) or loaded from a file.
class Model {
public:
    Model(const Device &dev, const std::vector<std::size_t> &input_shape, std::uint64_t seed = 0) {
        suanli_model *m = nullptr;
        check(suanli_model_new(dev.get(), input_shape.data(), input_shape.size(), seed, &m));
        h_ = Handle(m);
    }
    static Model load(const Device &dev, const std::string &path) {
        suanli_model *m = nullptr;
        check(suanli_model_load(dev.get(), path.c_str(), &m));
        return Model(m);
    }
    /// A graph (residual connections, merges, several inputs and outputs) from Keras's
    /// functional config as JSON.
    static Model from_config(const Device &dev, const std::string &config_json, std::uint64_t seed = 0) {
        suanli_model *m = nullptr;
        check(suanli_model_from_config(dev.get(), config_json.c_str(), seed, &m));
        return Model(m);
    }
    /// Appends a layer: `{"class_name": "Dense", "config": {"units": 10}}`.
    Model &add(const std::string &layer_json) {
        check(suanli_model_add(h_.get(), layer_json.c_str()));
        return *this;
    }
    void compile(suanli_optimizer optimizer, double lr, suanli_loss loss) { check(suanli_model_compile(h_.get(), optimizer, lr, loss)); }
    /// "float32" or "mixed_float16" (float16 operands, float32 master weights, loss scaling).
    void set_precision_policy(const std::string &policy) { check(suanli_model_set_precision_policy(h_.get(), policy.c_str())); }
    std::string precision_policy() const {
        const char *p = nullptr;
        check(suanli_model_precision_policy(h_.get(), &p));
        return p;
    }
    std::pair<std::size_t, std::size_t> dims() const {
        std::size_t i = 0, o = 0;
        check(suanli_model_dims(h_.get(), &i, &o));
        return {i, o};
    }
    /// Progress: (epoch, epochs, step, steps, loss, accuracy) -> false stops training.
    using Progress = std::function<bool(unsigned, unsigned, unsigned, unsigned, double, double)>;
    /// Trains on class labels; returns the last epoch's loss.
    double fit(View<float> x, View<std::uint32_t> labels, std::size_t epochs, std::size_t batch_size, std::uint64_t seed = 0, Progress progress = nullptr) {
        double loss = 0;
        check(suanli_model_fit(h_.get(), x.data, labels.data, nullptr, labels.size, epochs, batch_size, seed, progress ? &Model::trampoline : nullptr, progress ? &progress : nullptr, &loss));
        return loss;
    }
    std::vector<float> predict(View<float> x, std::size_t rows) const {
        std::vector<float> y(rows * dims().second);
        check(suanli_model_predict(h_.get(), x.data, rows, y.data(), y.size()));
        return y;
    }
    /// (loss, accuracy) in batches of `batch_size` rows (0: 32).
    std::pair<double, double> evaluate(View<float> x, View<std::uint32_t> labels, std::size_t batch_size = 0) const {
        double loss = 0, acc = 0;
        check(suanli_model_evaluate(h_.get(), x.data, labels.data, labels.size, batch_size, &loss, &acc));
        return {loss, acc};
    }
    void save(const std::string &path) const { check(suanli_model_save(h_.get(), path.c_str())); }

    // ---- several inputs and outputs ---------------------------------------------------
    /// (inputs, outputs): how many the model has.
    std::pair<std::size_t, std::size_t> counts() const {
        std::size_t i = 0, o = 0;
        check(suanli_model_counts(h_.get(), &i, &o));
        return {i, o};
    }
    /// Values per sample of input `k`.
    std::size_t input_size(std::size_t k) const {
        std::size_t n = 0;
        check(suanli_model_sizes(h_.get(), k, 0, &n, nullptr));
        return n;
    }
    /// Values per sample of output `k`.
    std::size_t output_size(std::size_t k) const {
        std::size_t n = 0;
        check(suanli_model_sizes(h_.get(), 0, k, nullptr, &n));
        return n;
    }
    /// A loss per output (or one for all) and their weights (empty: all 1).
    void compile_outputs(suanli_optimizer optimizer, double lr, const std::vector<suanli_loss> &losses, const std::vector<float> &weights = {}) {
        std::vector<std::uint32_t> ls(losses.begin(), losses.end());
        if (!weights.empty() && weights.size() != ls.size()) throw Error(SUANLI_ERROR_SHAPE_MISMATCH, "compile_outputs: a weight per loss");
        check(suanli_model_compile_outputs(h_.get(), optimizer, lr, ls.data(), weights.empty() ? nullptr : weights.data(), ls.size()));
    }
    /// One output's targets: class ids (an output with sparse categorical cross-entropy) or
    /// float values (any other loss).
    struct Target {
        const std::uint32_t *labels = nullptr;
        const float *values = nullptr;
        Target(const std::vector<std::uint32_t> &l) : labels(l.data()) {}  // NOLINT: implicit on purpose
        Target(const std::vector<float> &v) : values(v.data()) {}          // NOLINT: implicit on purpose
        Target(View<std::uint32_t> l) : labels(l.data) {}                  // NOLINT: implicit on purpose
        Target(View<float> v) : values(v.data) {}                          // NOLINT: implicit on purpose
    };
    /// Trains on an array per input (model input order, `rows × input_size(k)` floats) and a
    /// target per output; returns the last epoch's loss (the weighted total).
    double fit_multi(const std::vector<View<float>> &inputs, const std::vector<Target> &targets, std::size_t rows, std::size_t epochs, std::size_t batch_size, std::uint64_t seed = 0, Progress progress = nullptr) {
        Columns c(inputs, targets);
        double loss = 0;
        check(suanli_model_fit_multi(h_.get(), c.inputs.data(), c.inputs.size(), c.labels.data(), c.values.data(), c.labels.size(), rows, epochs, batch_size, seed, progress ? &Model::trampoline : nullptr, progress ? &progress : nullptr, &loss));
        return loss;
    }
    /// The total loss, and each output's loss and accuracy (NaN without one).
    struct Evaluation {
        double loss;
        std::vector<double> losses, accuracies;
    };
    Evaluation evaluate_multi(const std::vector<View<float>> &inputs, const std::vector<Target> &targets, std::size_t rows, std::size_t batch_size = 0) const {
        Columns c(inputs, targets);
        Evaluation e{0, std::vector<double>(targets.size()), std::vector<double>(targets.size())};
        check(suanli_model_evaluate_multi(h_.get(), c.inputs.data(), c.inputs.size(), c.labels.data(), c.values.data(), c.labels.size(), rows, batch_size, &e.loss, e.losses.data(), e.accuracies.data()));
        return e;
    }
    /// Every output for `rows` samples of an array per input: one vector per output.
    std::vector<std::vector<float>> predict_multi(const std::vector<View<float>> &inputs, std::size_t rows) const {
        std::vector<const float *> xs;
        for (auto &v : inputs) xs.push_back(v.data);
        std::size_t outs = counts().second;
        std::vector<std::vector<float>> ys(outs);
        std::vector<float *> ps;
        std::vector<std::size_t> caps;
        for (std::size_t k = 0; k < outs; k++) {
            ys[k].resize(rows * output_size(k));
            ps.push_back(ys[k].data());
            caps.push_back(ys[k].size());
        }
        check(suanli_model_predict_multi(h_.get(), xs.data(), xs.size(), rows, ps.data(), caps.data(), outs));
        return ys;
    }

private:
    /// The C arrays of `fit_multi`'s and `evaluate_multi`'s columns.
    struct Columns {
        std::vector<const float *> inputs, values;
        std::vector<const std::uint32_t *> labels;
        Columns(const std::vector<View<float>> &xs, const std::vector<Target> &ts) {
            for (auto &v : xs) inputs.push_back(v.data);
            for (auto &t : ts) {
                labels.push_back(t.labels);
                values.push_back(t.values);
            }
        }
    };
    explicit Model(suanli_model *m) : h_(m) {}
    static int32_t trampoline(void *user, std::uint32_t e, std::uint32_t es, std::uint32_t s, std::uint32_t ss, double loss, double acc) {
        try {
            return (*static_cast<Progress *>(user))(e, es, s, ss, loss, acc) ? 0 : 1;
        } catch (...) {
            return 1;  // an exception must not unwind through Rust: stop training instead
        }
    }
    using Handle = detail::Handle<suanli_model, suanli_model_release>;
    Handle h_;
};

}  // namespace suanli

#endif  // SUANLI_HPP
