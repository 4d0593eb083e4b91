"""Reads LeakSanitizer's report and fails on any leak but one kind: lavapipe's JIT-compiled
shader code reallocs 128-byte blocks that nothing frees (5 in test_api). Those allocations are
recognised by their shape, since no suppression can name them: 128 bytes from realloc whose
caller is JIT code, which has no module (LeakSanitizer prints "<unknown module>", or a
neighbouring module's name with an offset past its end). A leak of ours always has a frame
in a real module (libsuanli, the test program, the driver's own library).

Usage: lsan_filter.py REPORT   (exit 1 on any other leak; prints what it allowed and why)
"""

import os
import re
import struct
import sys


def blocks(text):
    """Each leak: (kind, bytes, frames after #0, the #0 frame)."""
    out = []
    for m in re.finditer(r"^(Direct|Indirect) leak of (\d+) byte\(s\) in \d+ object\(s\) allocated from:\n((?:    #\d+ .*\n?)+)", text, re.M):
        frames = [f.strip() for f in m.group(3).splitlines() if f.strip()]
        out.append((m.group(1), int(m.group(2)), frames))
    return out


def mapped_end(path):
    """The end of the last loadable segment of the ELF file at `path` (offsets past it are no
    part of that module), or None where the file cannot be read as a 64-bit little-endian
    ELF."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return None
            phoff, = struct.unpack_from("<Q", head, 0x20)
            phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return None
    end = None
    for i in range(phnum):
        p_type, = struct.unpack_from("<I", table, i * phentsize)
        vaddr, = struct.unpack_from("<Q", table, i * phentsize + 16)
        memsz, = struct.unpack_from("<Q", table, i * phentsize + 40)
        if p_type == 1:  # PT_LOAD
            end = max(end or 0, vaddr + memsz)
    return end


def past_module_end(frame):
    """True for a frame pinned on a module at an offset past that module's last segment: the
    symboliser names the mapping just below JIT pages, which can be any library (seen:
    libsuanli.so+0x1925455 with its segments ending at 0x17f441c)."""
    m = re.search(r"\((/\S+)\+0x([0-9a-f]+)\)", frame)
    if not m or " in " in frame:
        return False
    end = mapped_end(m.group(1))
    return end is not None and int(m.group(2), 16) >= end


def jit_leak(size, frames):
    # At least the caller's frame: a stack cut at the allocator says nothing about whose it is.
    if size != 128 or len(frames) < 2 or "__interceptor_realloc" not in frames[0]:
        return False
    for f in frames[1:]:
        if "(<unknown module>)" in f:
            continue
        # The symboliser sometimes pins JIT code on the sanitizer's own library, at an offset
        # no function of it has (JIT pages are mapped next to it).
        if re.search(r"\(\S*libasan\.so[^+]*\+0x[0-9a-f]+\)", f) and " in " not in f:
            continue
        if past_module_end(f):
            continue
        return False
    return True


def main():
    text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
    found = blocks(text)
    allowed = [b for b in found if jit_leak(b[1], b[2])]
    other = [b for b in found if not jit_leak(b[1], b[2])]
    if "LeakSanitizer" in text and not found:
        print("lsan_filter: LeakSanitizer reported something this filter cannot read")
        return 1
    if allowed:
        print(f"lsan_filter: allowed {len(allowed)} leak(s) of 128 bytes from lavapipe's JIT-compiled shader code (the driver never frees them; no module to suppress by)")
    if other:
        print(f"lsan_filter: {len(other)} other leak(s), {sum(b[1] for b in other)} bytes:")
        for kind, size, frames in other[:10]:
            print(f"  {kind} leak of {size} bytes: " + " <- ".join(frames[:4]))
        return 1
    print("lsan_filter: no leak of ours")
    return 0


if __name__ == "__main__":
    sys.exit(main())
