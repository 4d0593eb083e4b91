#!/usr/bin/env bash
# The C++ examples against Rust's mnist_mlp, on the same data and seed:
#  1. Rust trains briefly and saves; mnist_predict (C++) loads that file and must print
#     Rust's "Test accuracy: … (loss …)" line to every digit.
#  2. train (C++) trains the same model with the same seed: every epoch's loss and accuracy
#     must equal Rust's, and the trained weights must compute the same predictions to the
#     bit (same initial weights, shuffles and gathered bits).
# Usage: compare_rust.sh MNIST_PREDICT TRAIN REPO_ROOT
set -euo pipefail
predict=$1 train=$2 root=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(--epochs 2 --train-rows 3000 --seed 7)
cargo run --release --quiet --manifest-path "$root/Cargo.toml" --example mnist_mlp -- \
    "${args[@]}" --save "$tmp/model.safetensors" > "$tmp/rust.txt" 2>&1
"$predict" "$tmp/model.safetensors" "$root/data/mnist" > "$tmp/predict.txt"
"$train" "${args[@]}" --save "$tmp/cpp.safetensors" "$root/data/mnist" > "$tmp/train.txt"
"$predict" "$tmp/cpp.safetensors" "$root/data/mnist" > "$tmp/predict_cpp.txt"
fail=0
want=$(grep '^Test accuracy' "$tmp/rust.txt" | sed 's/ after .*//')
got=$(grep '^Test accuracy' "$tmp/predict.txt")
echo "Rust:          $want"
echo "mnist_predict: $got"
[ -n "$want" ] && [ "$want" = "$got" ] || { echo "FAIL: mnist_predict differs from Rust's evaluate"; fail=1; }
# "Epoch 1/2 94/94 - 0.1s - loss: 0.5467 - accuracy: 0.8473 - val_loss …" → "1/2 0.5467 0.8473"
epochs() { grep '^Epoch ' "$1" | sed -E 's/^Epoch ([0-9]+\/[0-9]+) .*- loss: ([0-9.]+) - accuracy: ([0-9.]+).*/\1 \2 \3/'; }
epochs "$tmp/rust.txt" > "$tmp/rust_epochs.txt"
epochs "$tmp/train.txt" > "$tmp/train_epochs.txt"
echo "Rust epochs (epoch loss accuracy):"; cat "$tmp/rust_epochs.txt"
echo "C++ train epochs:"; cat "$tmp/train_epochs.txt"
[ "$(wc -l < "$tmp/rust_epochs.txt")" -eq 2 ] && cmp -s "$tmp/rust_epochs.txt" "$tmp/train_epochs.txt" \
    || { echo "FAIL: the C++ training trajectory differs from Rust's"; cat "$tmp/rust.txt" "$tmp/train.txt"; fail=1; }
a=$(grep '^predictions digest' "$tmp/predict.txt"); b=$(grep '^predictions digest' "$tmp/predict_cpp.txt")
echo "Rust-trained $a; C++-trained $b"
[ -n "$a" ] && [ "$a" = "$b" ] || { echo "FAIL: the C++-trained weights differ from Rust's"; fail=1; }
exit $fail
