#!/usr/bin/python3
"""The exact RoPE of llama.cpp's nodes, against MPFR (gmpy2): checks (c) and (d) of the llama.cpp proof
(scripts/test_llama.sh, docs/ggml.md).

  exact.py VANILLA_DIR POSENC_DIR

Both are trees of llama_check dumps (integrations/ggml/llama/llama_check.cpp), paired by relative path.
Prints "OK name: ...", "FAIL name: ..." and "INFO ..." lines; exits 1 when a check failed.

  far      every ROPE node llama_check captured (layer 0's q and k at prompts starting at 0, 10^6 and 2^30): the
           posenc run's output is, byte for byte, the correctly rounded rotation of the node's captured input
           (docs/ggml.md, "What is computed"): f_i the double nearest ggml's real-valued frequency, cos and sin
           the float32 nearest m cos(p f_i), m sin(p f_i) (MPFR, 256 bits), each element RN(fl64(x c - y s)) in
           the node's type. Beside it, INFO: vanilla ggml's largest error against the same exact rotation,
           relative to the largest |element|.
  shift    the context shift: the keys the K-shift wrote (layer 0, the cells the prompt filled) against the keys
           computed directly at the shifted positions, relative to the largest |key|: within the rotation's
           rounding, two roundings to the cache's type and one to float32 (F16 cache: 3 2^-11; F32: 3 2^-24);
           vanilla's difference is reported beside it. The K-shift's own output is also checked byte for byte
           as in `far` (its input is the cache the prompt wrote).

Only what the test models use is evaluated: ext_factor 0 (no YaRN ramp); another value is refused by name.
"""
import sys

import gmpy2
import numpy as np
from gmpy2 import mpfr

from dumps import Dump, find_runs

MODE_NORMAL, MODE_NEOX, MODE_MROPE, MODE_VISION, MODE_IMROPE = 0, 2, 8, 24, 40
PREC = 256


def axes_of(mode, sections, pairs):
    """ggml_mrope_cache_init's axis of every pair (MROPE, IMROPE; VISION is not used by text models)."""
    s = sections
    total = sum(s)
    axis = []
    for i in range(pairs):
        sector = i % total
        if mode == MODE_IMROPE:
            if sector % 3 == 1 and sector < 3 * s[1]:
                a = 1
            elif sector % 3 == 2 and sector < 3 * s[2]:
                a = 2
            elif sector % 3 == 0 and sector < 3 * s[0]:
                a = 0
            else:
                a = 3
        elif s[0] <= sector < s[0] + s[1]:
            a = 1
        elif s[0] + s[1] <= sector < s[0] + s[1] + s[2]:
            a = 2
        elif sector >= s[0] + s[1] + s[2]:
            a = 3
        else:
            a = 0
        axis.append(a)
    return axis


def rn32(x):
    """The float32 nearest an mpfr value (ties to even; the values here are far from float32's subnormals)."""
    return float(mpfr(x, 24))


class Exact:
    """The exact rotation of one node's parameters: c and s per (position, pair), cached."""

    def __init__(self, op, factors):
        self.op = op
        if op["ext_factor"] != 0:
            raise SystemExit("exact.py: ext_factor %g (a YaRN ramp) is not evaluated here" % op["ext_factor"])
        gmpy2.get_context().precision = PREC
        self.n_dims = op["n_dims"]
        self.mode = op["mode"]
        self.pairs = self.n_dims // 2
        base, fs = mpfr(op["freq_base"]), mpfr(op["freq_scale"])
        self.m = mpfr(float(op["attn_factor"]))  # ext_factor 0: m = attn_factor
        self.freq = []
        for i in range(self.pairs):
            f = base ** (mpfr(-2 * i) / self.n_dims) * fs
            if factors is not None:
                f = f / mpfr(float(factors[i]))
            self.freq.append(float(f))  # the double nearest the real frequency
        multi = self.mode & MODE_MROPE
        self.axis = axes_of(self.mode, op["sections"], self.pairs) if multi else [0] * self.pairs
        self.cache = {}

    def cs(self, p, i):
        key = (p, i)
        if key not in self.cache:
            a = mpfr(p) * mpfr(self.freq[i])  # exact: 31 bits by 53
            self.cache[key] = (rn32(self.m * gmpy2.cos(a)), rn32(self.m * gmpy2.sin(a)))
        return self.cache[key]

    def rotate(self, x, pos, out_dtype, back=False):
        """x: [tokens, heads, ne0] float64 (the node's input values); pos: [axes, tokens]."""
        y = x.copy()
        tokens = x.shape[0]
        h = self.pairs
        for t in range(tokens):
            c = np.empty(h)
            s = np.empty(h)
            for i in range(h):
                p = int(pos[self.axis[i]][t])
                c[i], s[i] = self.cs(-p if back else p, i)
            if self.mode == MODE_NORMAL:
                xe, ye = x[t, :, 0:2 * h:2], x[t, :, 1:2 * h:2]
                y[t, :, 0:2 * h:2] = xe * c - ye * s  # both products exact in double: one rounding
                y[t, :, 1:2 * h:2] = ye * c + xe * s
            else:
                xe, ye = x[t, :, 0:h], x[t, :, h:2 * h]
                y[t, :, 0:h] = xe * c - ye * s
                y[t, :, h:2 * h] = ye * c + xe * s
        return y.astype(out_dtype)  # one rounding from double to the node's type


def node_positions(d, node):
    pos = d.get(node["pos"]).reshape(-1)
    tokens = node["ne"][2]
    axes = 4 if node["op_params"]["mode"] & MODE_MROPE else 1
    return pos.reshape(axes, tokens)


def exact_output(d, node):
    x = d.get(node["input"]).astype(np.float64)
    x = x.reshape(node["ne"][2], node["ne"][1], node["ne"][0])
    ff = d.get(node["freq_factors"]).reshape(-1) if node.get("freq_factors") else None
    ex = Exact(node["op_params"], ff)
    dtype = np.float16 if node["type"] == "f16" else np.float32
    return ex.rotate(x, node_positions(d, node), dtype)


class Report:
    def __init__(self):
        self.failed = 0

    def check(self, ok, name, msg):
        print(("OK " if ok else "FAIL ") + name + ": " + msg)
        self.failed += 0 if ok else 1

    def info(self, msg):
        print("INFO " + msg)


def rel_max(a, b):
    scale = float(np.max(np.abs(b))) or 1.0
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) / scale


def far_checks(rep, rel, va, po):
    vnodes = {n["id"]: n for n in va.ix.get("rope_nodes", [])}
    for node in po.ix.get("rope_nodes", []):
        if node.get("layer", 0) != 0:
            continue
        want = exact_output(po, node).astype(np.float32)  # the dumps hold F16 nodes' values as float32
        got = po.get(node["output"]).reshape(want.shape)
        same = np.array_equal(got.view(np.uint32), want.view(np.uint32))
        diff = int(np.count_nonzero(got != want))
        name = "%s %s %s %s" % (rel, node["tag"], node["name"], node["type"])
        v = vnodes.get(node["id"])
        ggml = ""
        if v is not None:
            vin = va.get(v["input"]).reshape(want.shape)
            if np.array_equal(vin, po.get(node["input"]).reshape(want.shape)):
                ggml = ", vanilla ggml's error %.3g" % rel_max(va.get(v["output"]).reshape(want.shape), want)
        rep.check(same, "exact " + name, "posenc's output %s the correctly rounded rotation (%d of %d elements "
                  "differ, largest error %.3g relative)%s" % ("is" if same else "is NOT", diff, want.size,
                                                             rel_max(got, want), ggml))


def shifted_vs_direct(d):
    """The shift run's keys: those the K-shift wrote into the prompt's cells, and those computed directly at the
    shifted positions (the direct prompt's layer-0 K RoPE), as [cells, heads, dims] float64; None if absent."""
    nodes = d.ix.get("rope_nodes", [])
    ks = [n for n in nodes if n["kind"] == "kshift" and n.get("layer", 0) == 0]
    dk = [n for n in nodes if n["tag"] == "direct" and n["kind"] == "k" and n.get("layer", 0) == 0]
    if not ks or not dk:
        return None
    k, direct = ks[0], dk[0]
    pos = d.get(k["pos"]).reshape(-1)
    n = d.ix["n_shift"]
    shifted = d.get(k["output"]).reshape(k["ne"][2], k["ne"][1], k["ne"][0])[:n].astype(np.float64)
    want = d.get(direct["output"]).reshape(direct["ne"][2], direct["ne"][1], direct["ne"][0]).astype(np.float64)
    assert np.all(pos[:n] == d.ix["delta"]) and np.all(pos[n:] == 0), "the K-shift's cells are not the prompt's"
    return shifted, want, k["type"]


def shift_checks(rep, rel, va, po):
    got = shifted_vs_direct(po)
    if got is None:
        return
    shifted, direct, kv = got
    # two roundings to the cache's type and the coefficients' float32 rounding in two rotations, against one
    bound = 4 * 2.0 ** -11 if kv == "f16" else 8 * 2.0 ** -23
    err = rel_max(shifted, direct)
    van = shifted_vs_direct(va)
    vmsg = ", vanilla ggml's %.3g" % rel_max(van[0], van[1]) if van is not None else ""
    rep.check(err <= bound, "shift " + rel, "keys after the context shift (KV %s, delta %d) against keys rotated "
              "directly at the shifted positions: %.3g relative, bound %.3g%s" % (kv, po.ix["delta"], err, bound, vmsg))


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    rep = Report()
    a_runs, b_runs = find_runs(argv[1]), find_runs(argv[2])
    for rel in sorted(b_runs):
        if rel not in a_runs:
            continue
        va, po = Dump(a_runs[rel]), Dump(b_runs[rel])
        sub = po.ix.get("subcommand")
        if sub in ("far", "shift") and "skipped" not in po.ix:
            far_checks(rep, rel, va, po)
        if sub == "shift" and "skipped" not in po.ix:
            shift_checks(rep, rel, va, po)
    print("exact: %d failed" % rep.failed)
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
