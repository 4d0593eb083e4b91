#!/usr/bin/env bash
# Calling through C costs nothing measurable: the same three measurements from Rust
# (examples/c_overhead.rs) and from C++ through libsuanli (examples/cpp/overhead.cpp),
# alternating which runs first, each in a fresh process; prints every run and the medians
# over rounds with the ratio C++ / Rust.
#
#   cargo build --release --example c_overhead --example mnist_mlp
#   cmake -S bindings/c -B build && cmake --build build
#   bash scripts/c_overhead.sh build [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: c_overhead.sh CMAKE_BUILD_DIR [ROUNDS]}
rounds=${2:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model="$tmp/mlp.safetensors"
target/release/examples/mnist_mlp --epochs 1 --train-rows 2000 --quiet --save "$model" > /dev/null
rust() { target/release/examples/c_overhead "$model" --repeat 20; }
cpp() { "$build/overhead" "$model" data/mnist --repeat 20; }
for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) = 1 ]; then order="rust cpp"; else order="cpp rust"; fi
    for side in $order; do
        $side | sed "s/^/$side /" | tee -a "$tmp/all.txt"
    done
done
echo "== medians over $rounds rounds"
for what in "matmul" "launch" "predict"; do
    r=$(grep "^rust $what" "$tmp/all.txt" | sed -E 's/.*median ([0-9.]+).*/\1/' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    c=$(grep "^cpp $what" "$tmp/all.txt" | sed -E 's/.*median ([0-9.]+).*/\1/' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    unit=$(grep -m1 "^rust $what" "$tmp/all.txt" | sed -E 's/.*median [0-9.]+ ([a-z]+).*/\1/')
    echo "$what: Rust $r $unit, C++ $c $unit, C++/Rust $(awk -v a="$c" -v b="$r" 'BEGIN {printf "%.3f", a / b}'), difference $(awk -v a="$c" -v b="$r" 'BEGIN {printf "%+.3f", a - b}') $unit"
done
