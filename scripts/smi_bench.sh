#!/usr/bin/env bash
# The exporter's cost (issue 23's targets): a scrape of 8 simulated devices over HTTP
# (median of 200, as curl times it, and the exporter's own suanli_scrape_duration_seconds),
# then the exporter's CPU use while Prometheus-style scrapes come every second for 30 s.
#
#   cargo build --release --manifest-path tools/smi/Cargo.toml
#   bash scripts/smi_bench.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
smi=tools/smi/target/release/suanli-smi
seconds=${1:-30}
out=$(mktemp)
"$smi" --simulate 8 --serve 127.0.0.1:0 > "$out" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 50); do grep -q serving "$out" && break; sleep 0.1; done
url=$(awk '{print $2}' "$out")
for _ in $(seq 200); do curl -s -o /dev/null -w '%{time_total}\n' "$url"; done | sort -g > "$out.t"
echo "scrape over HTTP, 8 simulated devices: median $(awk '{a[NR]=$1} END {printf "%.3f", a[int((NR+1)/2)] * 1000}' "$out.t") ms (200 scrapes; p90 $(awk '{a[NR]=$1} END {printf "%.3f", a[int(NR*0.9)] * 1000}' "$out.t") ms)"
echo "the exporter's own reading of the sensors: $(curl -s "$url" | awk '/^suanli_scrape_duration_seconds/ {printf "%.3f ms", $2 * 1000}')"
rm -f "$out.t"
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
t0=$(ticks)
for _ in $(seq "$seconds"); do curl -s -o /dev/null "$url"; sleep 1; done
t1=$(ticks)
echo "CPU while scraped every second for ${seconds} s: $(awk -v a="$t0" -v b="$t1" -v hz="$hz" -v s="$seconds" 'BEGIN {printf "%.3f", (b - a) / hz / s * 100}')% of a core"
