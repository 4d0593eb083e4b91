#!/usr/bin/env bash
# The several-processes benchmark (benches/parallel.rs --mpi): two ranks on this machine, over
# shared memory (Open MPI's default transport) and over TCP loopback (--mca btl self,tcp),
# each printing the MNIST MLP table, the all-reduce by message size with its latency and
# bandwidth fit, and the scaling projection (docs/SCALING.md).
#
#   cargo bench --features mpi --bench parallel --no-run
#   bash scripts/mpi_bench.sh [RANKS]
set -euo pipefail
cd "$(dirname "$0")/.."
ranks="${1:-2}"
# The newest parallel-<hash> built with the feature (tests/parallel.rs builds one too).
bench=""
for f in $(ls -t target/release/deps/parallel-* 2>/dev/null | grep -v '\.d$'); do
    if grep -aq "all-reduce of one bucket" "$f"; then bench="$f"; break; fi
done
if [ -z "$bench" ]; then
    echo "mpi_bench.sh: build the bench with the feature first: cargo bench --features mpi --bench parallel --no-run" >&2
    exit 1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 RUST_LOG="${RUST_LOG:-warn}"
for transport in "shared memory:" "TCP loopback:--mca btl self,tcp"; do
    label=${transport%%:*}; mca=${transport#*:}
    echo "== $ranks ranks over $label"
    # shellcheck disable=SC2086 # $mca is empty or three words
    mpirun -n "$ranks" --oversubscribe --bind-to none $mca "$bench" --mpi --label "$label"
done
