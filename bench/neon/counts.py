"""Guest instruction counts of the NEON path under qemu-user: every case of posenc-count (and of
posenc-count-ggml, when built) run K and 3K times under qemu-aarch64 with the insn_count.c plugin; the
difference, divided by 2K calls and the call's output elements, is the instructions per output element of the
kernel alone (start-up, buffer filling and each case's one-time setup, which the first call pays, cancel).
K is chosen so that K calls make at least 2^20 output elements.

    counts.py --qemu qemu-aarch64 --plugin insn_count.so --count posenc-count [--ggml posenc-count-ggml]
              --out neon.json [--quick] [--sysroot /usr/aarch64-linux-gnu --libdir /usr/lib/aarch64-linux-gnu]

--quick: five cases (the issue's two targets and the decode rows), for the report's quick plan. The JSON holds
the qemu version, the compiler of the driver (from its .comment section) and one row per case: name, what,
elements, K, both totals and the per-element count.
"""
import argparse
import datetime
import json
import math
import os
import re
import subprocess
import sys
import tempfile


QUICK = {"table_f32/neon", "sleef_u35_neon", "rope_qk_f32/neon", "rope_qk_f32_decode/neon",
         "rope_cache_lookup_neon_decode"}


def qemu_cmd(args, program):
    cmd = [args.qemu]
    if args.sysroot:
        cmd += ["-L", args.sysroot]
    if args.libdir:
        cmd += ["-E", "LD_LIBRARY_PATH=" + args.libdir]
    return cmd


def count(args, argv):
    """(guest instructions, the program's stdout) of one run under the plugin."""
    with tempfile.NamedTemporaryFile("r", suffix=".insns") as f:
        cmd = qemu_cmd(args, argv[0]) + ["-plugin", "%s,out=%s" % (os.path.abspath(args.plugin), f.name)] + argv
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            raise RuntimeError("%s: exit status %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()))
        m = re.search(r"insns (\d+)", f.read())
        if not m:
            raise RuntimeError("%s: the plugin wrote no count" % " ".join(cmd))
        return int(m.group(1)), p.stdout


def measure(args, name, what, argv_of, group):
    """One row: argv_of(reps) is the command line for reps calls."""
    _, out = count(args, argv_of(0))
    elements = int(re.search(r"elements (\d+)", out).group(1))
    k = max(1, math.ceil((1 << 20) / elements))
    n1, _ = count(args, argv_of(k))
    n3, _ = count(args, argv_of(3 * k))
    per = (n3 - n1) / (2.0 * k * elements)
    print("  %-34s %10.3f instructions/element  (K = %d: %d, 3K: %d)" % (name, per, k, n1, n3), flush=True)
    return {"name": name, "what": what, "group": group, "elements": elements, "k": k, "insns_k": n1,
            "insns_3k": n3, "per_element": per}


def compiler_of(path):
    """The .comment section's GCC version string of an ELF file (what built it), or None."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    m = re.search(rb"GCC: \(([^)]*)\) ([0-9.]+)", data)
    return ("GCC %s (%s)" % (m.group(2).decode(), m.group(1).decode())) if m else None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--qemu", default="qemu-aarch64")
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--count", required=True, help="posenc-count (aarch64)")
    ap.add_argument("--ggml", help="posenc-count-ggml (aarch64), when ggml was built")
    ap.add_argument("--ggml-note", default="", help="why there is no --ggml (shown in the report)")
    ap.add_argument("--sysroot")
    ap.add_argument("--libdir")
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--command", default="scripts/report.sh")
    args = ap.parse_args(argv)

    version = subprocess.run([args.qemu, "--version"], stdout=subprocess.PIPE, text=True).stdout.splitlines()[0]
    listing = subprocess.run(qemu_cmd(args, args.count) + [args.count, "--list"], stdout=subprocess.PIPE, text=True,
                             check=True).stdout
    rows = []
    print("guest instructions per output element (%s)" % version, flush=True)
    for line in listing.splitlines():
        name, _, what = line.split("\t")
        if args.quick and name not in QUICK:
            continue
        group = "peer" if not name.endswith(("/neon", "/scalar")) else "posenc"
        rows.append(measure(args, name, what, lambda reps, n=name: [args.count, n, str(reps)], group))
    if args.ggml and not args.quick:
        for fmt in ("f32", "f16"):
            for kind in ("prefill", "decode"):
                name = "ggml_rope_ext_%s%s" % (fmt, "" if kind == "prefill" else "_decode")
                what = "ggml's own ggml_rope_ext (NEOX), %s rows, %s" % (
                    fmt, "2048 tokens" if kind == "prefill" else "one decode token at 100000")
                rows.append(measure(args, name, what, lambda reps, f=fmt, k=kind: [args.ggml, str(reps), f, k], "peer"))
    data = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "qemu": version,
            "compiler": compiler_of(args.count), "ggml_compiler": compiler_of(args.ggml) if args.ggml else None,
            "ggml_note": args.ggml_note if not args.ggml else "", "command": args.command,
            "mode": "quick" if args.quick else "full", "rows": rows}
    with open(args.out, "w") as f:
        json.dump(data, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
