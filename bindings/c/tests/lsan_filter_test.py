"""Checks lsan_filter.py's rules on made-up LeakSanitizer reports against a real ELF file
(the module given, e.g. a test program): a 128-byte realloc whose caller sits past the end of
that module's segments is JIT code and allowed; the same leak at an offset inside the module,
or with a symbol, or from malloc, is a leak of ours and fails.

Usage: lsan_filter_test.py MODULE   (exit 1 if a rule answers wrongly)
"""

import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import lsan_filter  # noqa: E402


def report(alloc, frame):
    return (
        "==1==ERROR: LeakSanitizer: detected memory leaks\n\n"
        "Direct leak of 128 byte(s) in 1 object(s) allocated from:\n"
        f"    #0 0x7f35454b78d5 in {alloc} ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:85\n"
        f"    #1 0x7f3533e78455 {frame}\n\n"
        "SUMMARY: AddressSanitizer: 128 byte(s) leaked in 1 allocation(s).\n"
    )


def filter_status(text):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
    try:
        return subprocess.run(
            [sys.executable, os.path.join(here, "lsan_filter.py"), f.name],
            capture_output=True,
        ).returncode
    finally:
        os.unlink(f.name)


def main():
    module = os.path.abspath(sys.argv[1])
    end = lsan_filter.mapped_end(module)
    if end is None:
        print(f"lsan_filter_test: {module} is not a 64-bit ELF file")
        return 1
    cases = [
        ("JIT code past the module's end", report("__interceptor_realloc", f"({module}+{hex(end + 0x1000)})"), 0),
        ("JIT code with no module", report("__interceptor_realloc", "(<unknown module>)"), 0),
        ("inside the module", report("__interceptor_realloc", f"({module}+{hex(end // 2)})"), 1),
        ("a named function past the end", report("__interceptor_realloc", f"in leak_it ({module}+{hex(end + 0x1000)})"), 1),
        ("malloc, not realloc", report("__interceptor_malloc", f"({module}+{hex(end + 0x1000)})"), 1),
        ("a module that is not there", report("__interceptor_realloc", "(/nonexistent/libx.so+0x99999999)"), 1),
    ]
    wrong = 0
    for name, text, want in cases:
        got = filter_status(text)
        ok = got == want
        wrong += not ok
        print(f"lsan_filter_test: {name}: {'allowed' if got == 0 else 'a leak'} ({'ok' if ok else 'WRONG'})")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
