#!/usr/bin/env bash
# Runs a test program built with AddressSanitizer and fails on any invalid access (and if
# the test itself fails). Leak detection is off here: lavapipe leaks 128 bytes from the
# machine code it JIT-compiles for every pipeline, and LeakSanitizer cannot tell those
# allocations apart reliably (the fast unwinder stops in the JIT code and the symboliser
# then names no module or a random one; the slow unwinder takes minutes on these tests).
# See docs/C.md.
set -uo pipefail
out="$(mktemp)"
ASAN_OPTIONS="detect_leaks=0:abort_on_error=0" "$@" >"$out" 2>&1
status=$?
cat "$out"
if grep -q "ERROR: AddressSanitizer" "$out"; then
    echo "asan_check: AddressSanitizer found an invalid access" >&2
    exit 1
fi
if [ $status -ne 0 ] || ! grep -q "test_.*: ok" "$out"; then
    echo "asan_check: the test failed (status $status)" >&2
    exit 1
fi
echo "asan_check: no invalid access"
