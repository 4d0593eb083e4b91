#!/usr/bin/env bash
# Runs a test program built with AddressSanitizer and LeakSanitizer: fails on any invalid
# access, on any leak but lavapipe's (tests/lsan_filter.py: its JIT-compiled shader code
# reallocs 128-byte blocks it never frees; nothing names that code, so it is
# recognised by shape), and if the test itself fails. See docs/C.md.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
ASAN_OPTIONS="detect_leaks=1:abort_on_error=0" LSAN_OPTIONS="exitcode=0" "$@" >"$out" 2>&1
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
if grep -q "LeakSanitizer" "$out"; then
    python3 "$here/lsan_filter.py" "$out" || { echo "asan_check: a leak" >&2; exit 1; }
fi
echo "asan_check: no invalid access, no leak of ours"
