// MNIST's IDX files (gzip-compressed, as data/mnist holds them), read with zlib: what the
// C++ examples need to feed the same images and labels to libsuanli as Rust's examples use.
#ifndef SUANLI_EXAMPLES_MNIST_IDX_HPP
#define SUANLI_EXAMPLES_MNIST_IDX_HPP

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace mnist {

// The folder holding MNIST: the argument if given, else $MNIST_DIR, else ./data/mnist.
inline std::string dir(const char *arg) {
    if (arg && *arg) return arg;
    if (const char *e = std::getenv("MNIST_DIR")) return e;
    return "data/mnist";
}

// The bytes of a gzip file, decompressed.
inline std::vector<std::uint8_t> gunzip(const std::string &path) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f) throw std::runtime_error("cannot open " + path + " (set MNIST_DIR or pass the folder)");
    std::vector<std::uint8_t> out;
    std::uint8_t buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
    gzclose(f);
    if (n < 0) throw std::runtime_error("cannot read " + path);
    return out;
}

inline std::uint32_t be32(const std::uint8_t *p) {
    return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
}

struct Set {
    std::size_t rows = 0;
    std::vector<std::uint8_t> pixels;  // rows × 784
    std::vector<std::uint32_t> labels;
};

// `prefix` "train" or "t10k": the images and labels, checked against their headers.
inline Set load(const std::string &folder, const std::string &prefix) {
    auto img = gunzip(folder + "/" + prefix + "-images-idx3-ubyte.gz");
    auto lab = gunzip(folder + "/" + prefix + "-labels-idx1-ubyte.gz");
    if (img.size() < 16 || be32(img.data()) != 2051 || lab.size() < 8 || be32(lab.data()) != 2049)
        throw std::runtime_error("not MNIST IDX files in " + folder);
    Set s;
    s.rows = be32(img.data() + 4);
    if (be32(img.data() + 8) * be32(img.data() + 12) != 784 || img.size() != 16 + s.rows * 784 ||
        be32(lab.data() + 4) != s.rows || lab.size() != 8 + s.rows)
        throw std::runtime_error("MNIST files of unexpected sizes in " + folder);
    s.pixels.assign(img.begin() + 16, img.end());
    s.labels.assign(lab.begin() + 8, lab.end());
    return s;
}

// The first `rows` images as floats, each byte times 1/255 in float: the bits Rust's
// `Dataset::from_u8(.., 1.0 / 255.0, ..)` gathers (k / 255.0 would differ in the last bit
// for about half the bytes, and training would drift from Rust's).
inline std::vector<float> floats(const Set &s, std::size_t rows) {
    const float scale = 1.0f / 255.0f;
    std::vector<float> x(rows * 784);
    for (std::size_t i = 0; i < x.size(); i++) x[i] = float(s.pixels[i]) * scale;
    return x;
}

}  // namespace mnist

#endif
