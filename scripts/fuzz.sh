#!/usr/bin/env bash
# Runs every fuzz target for a bounded time (default 120 s each) and prints how many inputs
# each executed. Needs a nightly toolchain and cargo-fuzz:
#   rustup toolchain install nightly && cargo install cargo-fuzz
# Not part of CI (.ci/run); run by hand or on a schedule:
#   bash scripts/fuzz.sh [seconds-per-target]
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs="${1:-120}"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
for target in idx model_file wgsl; do
  mkdir -p "corpus/$target"
  # The crate's own shaders seed the WGSL target; the others have seeds in fuzz/seeds.
  seeds="seeds/$target"
  [ "$target" = wgsl ] && seeds="../shaders"
  echo "== $target: ${secs}s"
  # -malloc_limit_mb: any single allocation above 256 MB is a failure (the parsers must not
  # allocate a size a file merely claims). -rss_limit_mb bounds the process.
  cargo +nightly fuzz run "$target" "corpus/$target" "$seeds" -- \
    -max_total_time="$secs" -malloc_limit_mb=256 -rss_limit_mb=2048 -print_final_stats=1 \
    2>&1 | tee "/tmp/fuzz-$target.log" | grep -E "^(#[0-9]+ *DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+== ERROR|SUMMARY|Done)" || true
  if grep -q "ERROR: libFuzzer\|panicked\|SUMMARY: " "/tmp/fuzz-$target.log"; then
    echo "!! $target found a crash; see /tmp/fuzz-$target.log and fuzz/artifacts/$target"
    exit 1
  fi
done
echo "no crashes"
