#!/usr/bin/env python3
"""The sparse row kernels' software prefetches survive the compiler.

GCC 12's IPA mod/ref analysis finds a function that only prefetches free of side effects and
deletes the calls to it wherever it is not inlined: the gathered GEMV's look-ahead vanished that
way from its OpenMP body, unnoticed, for several sessions of measurements. This reads the
kernels library's machine code (objdump) and fails when a function that must prefetch does not.

usage: check_prefetch.py LIBRARY.a...   (exit 77, "skipped", off x86-64 or without objdump)
"""
import platform
import re
import shutil
import subprocess
import sys

# (pattern of a demangled function name, whether every match must prefetch or at least one)
REQUIRED = [
    (r"strata::cpu::gather_matvec\(.*\) \[clone \._omp_fn\.\d+\]", "any"),
    (r"strata::cpu::\(anonymous namespace\)::accumulate_group\(", "all"),
    (r"strata::cpu::\(anonymous namespace\)::axpy_avx2<", "all"),
    (r"strata::cpu::\(anonymous namespace\)::axpy_avx512<", "all"),
    (r"strata::cpu::\(anonymous namespace\)::axpy4_avx512_q4\(", "all"),
    (r"strata::cpu::\(anonymous namespace\)::axpy4_avx2_q4\(", "all"),
]


def functions(disassembly):
    """{demangled name: number of prefetch instructions in its body}."""
    out, name = {}, None
    for line in disassembly.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
        if m:
            name = m.group(1)
            out.setdefault(name, 0)
        elif name is not None and "prefetch" in line:
            out[name] += 1
    return out


def check(funcs):
    errors = []
    for pattern, mode in REQUIRED:
        matches = {n: c for n, c in funcs.items() if re.search(pattern, n)}
        if not matches:
            errors.append(f"no function matches {pattern}")
        elif mode == "all" and any(c == 0 for c in matches.values()):
            errors.append("no prefetch in: " + ", ".join(n for n, c in matches.items() if c == 0))
        elif mode == "any" and all(c == 0 for c in matches.values()):
            errors.append(f"no prefetch in any of {len(matches)} functions matching {pattern}")
    return errors


def main():
    if platform.machine() not in ("x86_64", "AMD64") or shutil.which("objdump") is None:
        print("skipped: needs x86-64 and objdump")
        return 77
    dis = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", *sys.argv[1:]], check=True,
                         capture_output=True, text=True).stdout
    errors = check(functions(dis))
    for e in errors:
        print("error:", e)
    if not errors:
        print("prefetches present in", len(REQUIRED), "kernel groups")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
