#!/usr/bin/env python3
"""The ODR trap of per-ISA translation units, checked on the built archive (docs/architecture.md, "Who may include what").

1. No object outside the AVX2/AVX-512 units contains a VEX/EVEX instruction: the scalar path and the
   dispatcher must run on any x86-64.
2. No code symbol is defined in more than one object (an inline function instantiated in an -mavx2 unit
   and in a baseline unit is merged by the linker, and the baseline path could end up running the AVX
   copy: xsimd PR #1311, numpy#25274). Only per-ISA namespaced symbols may live in the ISA units.

usage: check_isa_objects.py path/to/libposenc.a
"""
import os
import re
import subprocess
import sys
import tempfile

ISA_UNITS = {"isa_avx2": "avx2", "isa_avx512": "avx512"}
ALLOWED_SHARED = {"DW.ref.__gxx_personality_v0"}


def run(*cmd, cwd=None):
    return subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True).stdout


def main():
    archive = os.path.abspath(sys.argv[1])
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        run("ar", "x", archive, cwd=tmp)
        objects = sorted(f for f in os.listdir(tmp) if f.endswith(".o"))
        defined = {}
        for obj in objects:
            path = os.path.join(tmp, obj)
            isa = next((v for k, v in ISA_UNITS.items() if k in obj), None)
            if isa is None:
                asm = run("objdump", "-d", "--no-show-raw-insn", path)
                vex = [l for l in asm.splitlines() if re.match(r"\s+[0-9a-f]+:\s+v[a-z]", l) or "%ymm" in l or "%zmm" in l]
                if vex:
                    problems.append(f"{obj}: {len(vex)} AVX instructions in a baseline unit, e.g. {vex[0].strip()}")
            for line in run("nm", "--defined-only", path).splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[1] in "TtWwVvu" and parts[1] not in "tw":
                    defined.setdefault(parts[2], []).append((obj, isa))
        for sym, where in defined.items():
            if len(where) > 1 and sym not in ALLOWED_SHARED:
                problems.append(f"{sym} defined in {', '.join(o for o, _ in where)}")
        for sym, where in defined.items():
            for obj, isa in where:
                if isa and sym not in ALLOWED_SHARED:
                    name = run("c++filt", sym).strip()
                    if f"posenc::{isa}::" not in name and f"xsimd::{'avx512bw' if isa == 'avx512' else 'fma3<xsimd::avx2>'}" not in name:
                        problems.append(f"{obj}: symbol outside the {isa} namespace: {name[:120]}")
        print(f"checked {len(objects)} objects, {len(defined)} code symbols")
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
