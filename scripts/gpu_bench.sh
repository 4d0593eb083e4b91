#!/usr/bin/env bash
# Every GPU number suanli reports, in one prepared command, for a machine with a GPU and no
# network (docs/PERFORMANCE.md explains each section and docs/DEVELOPERS.md how to reach a GPU).
#
# Prepare, on a machine with Rust, from the repository root:
#   cargo build --release --examples --benches
#   bash scripts/gpu_bench.sh --pack DIR
# which copies what the run needs into DIR (about 130 MB, about 13 MB as .tar.xz):
#   DIR/gpu_bench.sh                     this script (binaries stripped: compress DIR to carry it)
#   DIR/bin/devices, mnist_mlp, mnist_cnn   from target/release/examples/
#   DIR/bin/matmul, step, conv, attention, arrays   the bench binaries (target/release/deps/<name>-<hash>)
#   DIR/data/mnist/*.gz                  MNIST
#   DIR/benches/torch_*.py, cupy_arrays.py   the PyTorch side (matmul, MLP, CNN, GPT) and CuPy's
# Run, on the GPU machine (no Rust, no network needed; a Vulkan, Metal or DX12 driver):
#   bash DIR/gpu_bench.sh [--peak-tflops 67] [--out FILE]
# or straight from a built repository: bash scripts/gpu_bench.sh [--peak-tflops 67].
#
# Sections: the adapter table; a matmul sweep (512..8192 square and the MLP shapes, GFLOP/s per
# kernel, the tuner's pick, its share of the FP32 peak with --peak-tflops); the MNIST MLP at
# batch 32 and 128 (first and median epoch, µs per step) with the profiler's µs per dispatch
# and `cargo bench --bench step`'s per-dispatch table; keras.io's MNIST convnet at batch 128
# (first and median epoch, µs per step, the profiler's table) and `cargo bench --bench conv`
# (each convolution pass beside the matmul of its GEMM shape); and, when
# `python3 -c "import torch; assert torch.cuda.is_available()"` works, torch.matmul in FP32
# with TF32 off and the same MLP and CNN on CUDA. Written to stdout and to --out (default
# gpu_bench.txt). Budget: under 8 minutes on one GPU. `--small` runs tiny sizes (CI runs it on
# lavapipe so the script keeps working).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
peak=""
out="gpu_bench.txt"
small=0
pack=""
while [ $# -gt 0 ]; do
    case "$1" in
        --peak-tflops) peak="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --small) small=1; shift ;;
        --pack) pack="$2"; shift 2 ;;
        -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
        *) echo "gpu_bench.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
done

# Where the binaries, data and PyTorch scripts are: a packed folder, or a built repository.
if [ -x "$here/bin/mnist_mlp" ]; then
    root="$here"; bin="$here/bin"
else
    root=$(cd "$here/.." && pwd); bin=""
fi
find_bench() { # the bench binary of that name, as cargo reports it (a test binary of the same
    # name, tests/attention.rs, lives beside it in target/release/deps)
    (cd "$root" && cargo build --release --quiet --bench "$1" --message-format=json 2>/dev/null) |
        python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "bench" in m["target"]["kind"]:
        print(m["executable"])' | tail -n1
}
if [ -z "$bin" ]; then
    devices="$root/target/release/examples/devices"
    mnist="$root/target/release/examples/mnist_mlp"
    cnn="$root/target/release/examples/mnist_cnn"
    matmul=$(find_bench matmul)
    step=$(find_bench step)
    conv=$(find_bench conv)
    gpt="$root/target/release/examples/shakespeare_gpt"
    attention=$(find_bench attention)
    arrays=$(find_bench arrays)
else
    devices="$bin/devices"; mnist="$bin/mnist_mlp"; cnn="$bin/mnist_cnn"
    matmul="$bin/matmul"; step="$bin/step"; conv="$bin/conv"
    gpt="$bin/shakespeare_gpt"; attention="$bin/attention"; arrays="$bin/arrays"
fi
for f in "$devices" "$mnist" "$cnn" "$matmul" "$step" "$conv" "$gpt" "$attention" "$arrays"; do
    if [ -z "$f" ] || [ ! -x "$f" ]; then
        echo "gpu_bench.sh: missing binary ${f:-(matmul, step or conv bench)}: run 'cargo build --release --examples --benches' first" >&2
        exit 1
    fi
done

if [ -n "$pack" ]; then
    mkdir -p "$pack/bin" "$pack/data/mnist" "$pack/data/tinyshakespeare" "$pack/benches"
    cp "$devices" "$mnist" "$cnn" "$gpt" "$pack/bin/"
    cp "$attention" "$pack/bin/attention"
    cp "$arrays" "$pack/bin/arrays"
    cp "$root/data/tinyshakespeare/input.txt" "$pack/data/tinyshakespeare/"
    cp "$matmul" "$pack/bin/matmul"
    cp "$step" "$pack/bin/step"
    cp "$conv" "$pack/bin/conv"
    cp "$root"/data/mnist/*.gz "$pack/data/mnist/"
    cp "$root/benches/torch_matmul.py" "$root/benches/torch_mnist.py" "$root/benches/torch_mnist_cnn.py" "$root/benches/torch_gpt.py" "$root/benches/cupy_arrays.py" "$pack/benches/"
    cp "$0" "$pack/gpu_bench.sh"
    # Debug symbols would make the pack too large to carry (docs/DEVELOPERS.md).
    if command -v strip >/dev/null; then strip "$pack"/bin/*; fi
    echo "packed into $pack ($(du -sh "$pack" | cut -f1)); run: bash $pack/gpu_bench.sh --peak-tflops <FP32 TFLOP/s>"
    exit 0
fi

export MNIST_DIR="${MNIST_DIR:-$root/data/mnist}"
export RUST_LOG="${RUST_LOG:-warn}"
if [ $small = 1 ]; then
    sizes="128,256"; epochs=2; rows="--train-rows 2048"; torch_sizes="128,256"
    cnn_epochs=2; cnn_rows="--train-rows 512"; conv_mode=tiny
    gpt_cpu=(--iters 40 --eval-interval 20 --eval-batches 4 --sample 20 --bench-generate); gpt_big=(--iters 4 --eval-interval 2 --eval-batches 1 --sample 0 --block 64 --batch-size 4)
    attention_mode=tiny; arrays_mode=tiny
else
    sizes="512,1024,2048,4096,8192"; epochs=3; rows=""; torch_sizes="512,1024,2048,4096,8192"
    cnn_epochs=3; cnn_rows=""; conv_mode=quick
    gpt_cpu=(--sample 500 --bench-generate); gpt_big=(--iters 5000 --eval-interval 500 --eval-batches 100 --sample 200)
    attention_mode=full; arrays_mode=full
fi
peak_arg=(); [ -n "$peak" ] && peak_arg=(--peak-tflops "$peak")

: > "$out"
say() { printf '%s\n' "$*" | tee -a "$out"; }
run() { # a section: its title, then the command's output, both to stdout and the file
    say ""; say "== $1"; shift
    "$@" 2>&1 | tee -a "$out"
}

say "suanli gpu_bench $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)"
run "adapters" "$devices"
run "matmul GFLOP/s (sizes $sizes; MLP shapes; the tuner's pick)" \
    "$matmul" quick --no-cpu --sizes "$sizes" "${peak_arg[@]}"
# The tensor-core kernel (cooperative matrices, f16 operands, f32 accumulation) forced at the
# large squares, beside the FP32 rows above (which run without SUANLI_MATMUL_PRECISION, so
# the tensor-core columns are absent there); tensor cores need SUANLI_MATMUL_PRECISION=medium. An adapter
# without cooperative matrices refuses the forced variant: the section then says so.
coop_sizes="4096,8192"; [ $small = 1 ] && coop_sizes="$sizes"
run "matmul GFLOP/s, tensor cores forced (SUANLI_MATMUL=coop16h, sizes $coop_sizes)" \
    env SUANLI_MATMUL=coop16h SUANLI_MATMUL_PRECISION=medium \
    "$matmul" quick --no-cpu --sizes "$coop_sizes" "${peak_arg[@]}" || true
for b in 32 128; do
    # shellcheck disable=SC2086 # $rows is empty or two words
    run "MNIST MLP, batch $b: epochs, first and median epoch, µs per step" \
        "$mnist" --epochs "$epochs" --batch-size "$b" --bench --no-torch $rows
    run "MNIST MLP, batch $b: µs per dispatch (profiler on: submissions serialised)" \
        "$mnist" --epochs 1 --batch-size "$b" --profile --quiet --train-rows 6400
    run "one training step, batch $b: µs per dispatch (cargo bench --bench step)" "$step" "$b"
done
# The CNN (keras.io's MNIST convnet, batch 128): epochs, then where a step's time goes, then
# each convolution pass beside the matmul of the same GEMM shape.
# shellcheck disable=SC2086 # $cnn_rows is empty or two words
run "MNIST CNN, batch 128: epochs, first and median epoch, µs per step" \
    "$cnn" --epochs "$cnn_epochs" --bench --no-torch $cnn_rows
run "MNIST CNN, batch 128: µs per dispatch (profiler on: submissions serialised)" \
    "$cnn" --epochs 1 --profile --quiet --train-rows 2560
run "convolution passes beside matmul (cargo bench --bench conv)" "$conv" "$conv_mode"
# The GPT: nanoGPT's CPU recipe (train and validation loss, ms per iteration, tokens/s, a
# sample), the nanoGPT preset, and the attention paths (fused and unfused, and the tuner's pick).
gpt_data="$root/data/tinyshakespeare/input.txt"
run "GPT on Tiny Shakespeare, nanoGPT's CPU recipe (shakespeare_gpt)" \
    "$gpt" --data "$gpt_data" "${gpt_cpu[@]}"
run "GPT on Tiny Shakespeare, --preset nanogpt" \
    "$gpt" --data "$gpt_data" --preset nanogpt "${gpt_big[@]}"
run "attention, fused and unfused (cargo bench --bench attention)" "$attention" "$attention_mode"
# Arrays (suanli::array, suanli.numpy): a fused ten-operation expression (GB/s against the
# same ten as separate kernels), a sum, matmul, a sort, and the host cost per operation;
# CuPy's side when it imports (cupy.fuse, a kernel per operation, sum, matmul, sort).
run "arrays: fused elementwise, sum, matmul, sort, fft, solve (cargo bench --bench arrays)" "$arrays" "$arrays_mode"
if python3 -c "import cupy; cupy.zeros(1)" >/dev/null 2>&1; then
    cupy_args=(); [ "$arrays_mode" = tiny ] && cupy_args=(--tiny)
    run "CuPy: the same array operations" python3 "$root/benches/cupy_arrays.py" "${cupy_args[@]}"
else
    say ""; say "== CuPy: not available here (python3 -c 'import cupy' failed)"
fi
if python3 -c "import torch; assert torch.cuda.is_available()" >/dev/null 2>&1; then
    run "PyTorch on CUDA: torch.matmul FP32, TF32 off (GFLOP/s)" \
        python3 "$root/benches/torch_matmul.py" --sizes "$torch_sizes"
    run "PyTorch on CUDA: torch.matmul float16, tensor cores (GFLOP/s; beside coop16h)" \
        python3 "$root/benches/torch_matmul.py" --sizes "$torch_sizes" --half
    for b in 32 128; do
        run "PyTorch on CUDA: the same MLP, batch $b" \
            python3 "$root/benches/torch_mnist.py" --device cuda --epochs "$epochs" --batch-size "$b"
    done
    run "PyTorch on CUDA: the same CNN, batch 128" \
        python3 "$root/benches/torch_mnist_cnn.py" --device cuda --epochs "$cnn_epochs"
    run "PyTorch on CUDA: the same GPT, nanoGPT's CPU recipe" \
        python3 "$root/benches/torch_gpt.py" --device cuda --data "$gpt_data"
    run "PyTorch on CUDA: the same GPT, the nanoGPT preset (eager)" \
        python3 "$root/benches/torch_gpt.py" --device cuda --data "$gpt_data" --preset nanogpt
else
    say ""; say "== PyTorch on CUDA: not available here (python3 -c 'import torch; assert torch.cuda.is_available()' failed)"
fi
rm -f trace.json
# Every section printed what it should: a missing one is a failure, not a silent gap.
for want in "suanli adapters" "shape (M×N×K)" "median epoch" "Top kernels by GPU time" "µs per dispatch" "GEMM M x N x K" "conv2d" "val loss" "unfused f+b" "fused (one kernel)"; do
    if ! grep -q "$want" "$out"; then
        echo "gpu_bench.sh: the output lacks \"$want\"" >&2
        exit 1
    fi
done
say ""; say "== done: $out"
