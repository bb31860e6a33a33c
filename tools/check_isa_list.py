#!/usr/bin/env python3
"""Holds every place that must know the instruction-set paths to lib/isa/isa_list.hpp, the one list of them.

    check_isa_list.py ROOT

For each line X(ENUM, name, have) of POSENC_ISAS, in order:
  - include/posenc/posenc.h has POSENC_ISA_<ENUM> = its index, and POSENC_ISA_COUNT is their number;
  - lib/isa/isa_<name>.cpp exists and defines the path with POSENC_DEFINE_ISA(name, ...), and its test twin
    tests/support/hooks_<name>.cpp with POSENC_DEFINE_HOOKS(name, ...);
  - meson.build builds lib/isa/isa_scalar.cpp with the library, and gives every other path its flags in
    isa_args (a loop over it builds lib/isa/isa_<name>.cpp and adds `name` to isa_names, the tests' forced
    paths) and a meson option `name`;
  - lib/dispatch/cpu.hpp's CpuFeatures has `bool name` (dispatch.cpp reads cpu.<name>);
  - lib/isa/isa_list.hpp defaults POSENC_HAVE_<ENUM> for every path but scalar;
  - the baseline folders (lib/abi, lib/setup, lib/dispatch) include nothing of lib/simd/ or xsimd, and of
    lib/kernel/ only job.hpp: no ISA-specific code is compiled without its unit's flags;
  - nothing outside the list spells out the paths: no `<= POSENC_ISA_NEON` loop, no list of the four names.
Prints what is missing and exits 1; docs/architecture.md, "Add an ISA", is the checklist this enforces.
"""
import os
import re

import checks
from checks import read


def check(root):
    lst = read(root, "lib/isa/isa_list.hpp")
    body = lst[lst.index("#define POSENC_ISAS(X)"):]
    body = body[:body.index("\n\n")]
    entries = re.findall(r"X\((\w+),\s*(\w+),\s*(\w+)\)", body)
    bad = []
    if not entries or entries[0][:2] != ("SCALAR", "scalar"):
        bad.append("lib/isa/isa_list.hpp: the list must start with X(SCALAR, scalar, 1)")
    header = read(root, "include/posenc/posenc.h")
    meson = read(root, "meson.build")
    options = read(root, "meson_options.txt")
    cpu = read(root, "lib/dispatch/cpu.hpp")
    for i, (enum, name, have) in enumerate(entries):
        if not re.search(r"POSENC_ISA_%s\s*=\s*%d\b" % (enum, i), header):
            bad.append("include/posenc/posenc.h: no POSENC_ISA_%s = %d" % (enum, i))
        unit = "lib/isa/isa_%s.cpp" % name
        if not os.path.exists(os.path.join(root, unit)):
            bad.append("%s is missing" % unit)
        elif "POSENC_DEFINE_ISA(%s," % name not in read(root, unit):
            bad.append("%s does not define the path with POSENC_DEFINE_ISA(%s, ...)" % (unit, name))
        hooks = "tests/support/hooks_%s.cpp" % name
        if not os.path.exists(os.path.join(root, hooks)):
            bad.append("%s is missing" % hooks)
        elif "POSENC_DEFINE_HOOKS(%s," % name not in read(root, hooks):
            bad.append("%s does not define the hooks with POSENC_DEFINE_HOOKS(%s, ...)" % (hooks, name))
        if name == "scalar" and "'%s'" % unit not in meson:
            bad.append("meson.build does not build %s" % unit)
        if name != "scalar":
            # meson.build's loop over isa_args builds lib/isa/isa_<name>.cpp and adds name to isa_names
            if "isa_args += {'%s':" % name not in meson:
                bad.append("meson.build does not give '%s' its flags in isa_args" % name)
            if not re.search(r"option\('%s'" % name, options):
                bad.append("meson_options.txt has no option '%s'" % name)
            if "#ifndef POSENC_HAVE_%s" % enum not in lst or have != "POSENC_HAVE_%s" % enum:
                bad.append("lib/isa/isa_list.hpp: %s's `have` must be POSENC_HAVE_%s, defaulted to 0" % (name, enum))
        if not re.search(r"bool %s\b" % name, cpu):
            bad.append("lib/dispatch/cpu.hpp: CpuFeatures has no bool %s" % name)
    if not re.search(r"POSENC_ISA_COUNT\s*=\s*%d\b" % len(entries), header):
        bad.append("include/posenc/posenc.h: POSENC_ISA_COUNT is not %d" % len(entries))
    # the baseline layers stay free of vector code
    baseline = [os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/")
                for folder in ("abi", "setup", "dispatch")
                for d, _, names in sorted(os.walk(os.path.join(root, "lib", folder)))  # lib/setup/schemes/ too
                for f in sorted(names)]
    for rel in baseline:
        for no, line in enumerate(read(root, rel).splitlines(), 1):
            m = re.match(r'\s*#\s*include\s*[<"]([^>"]+)[>"]', line)
            if m and (m.group(1).startswith(("simd/", "xsimd")) or
                      (m.group(1).startswith("kernel/") and m.group(1) != "kernel/job.hpp")):
                bad.append("%s:%d: baseline code includes %s" % (rel, no, m.group(1)))
    # nothing else enumerates the paths by hand
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith((".", "build")) and x != "corpus"]
        for f in files:
            if not f.endswith((".c", ".h", ".cpp", ".hpp", ".py", ".build")):
                continue
            rel = os.path.relpath(os.path.join(d, f), root)
            if rel in ("lib/isa/isa_list.hpp", "tools/check_isa_list.py"):
                continue
            text = read(root, rel)
            if "<= POSENC_ISA_NEON" in text:
                bad.append("%s loops to POSENC_ISA_NEON: loop to POSENC_ISA_COUNT" % rel)
            if re.search(r"\{\s*POSENC_ISA_SCALAR\s*,\s*POSENC_ISA_AVX2\s*,\s*POSENC_ISA_AVX512\s*,\s*POSENC_ISA_NEON\s*\}",
                         text):
                bad.append("%s lists the four paths by hand: loop to POSENC_ISA_COUNT" % rel)
    return bad, "%d paths listed, %d problems" % (len(entries), len(bad))


if __name__ == "__main__":
    checks.run(check, __doc__)
