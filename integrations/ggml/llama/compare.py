#!/usr/bin/python3
"""Compares two dumps of llama_check (integrations/ggml/llama/llama_check.cpp): a vanilla llama.cpp run and a
run with posenc's ggml backend (GGML_BACKEND_PATH), or two vanilla runs (e.g. 1 and 2 threads).

  compare.py [--quiet] A_DIR B_DIR

A_DIR and B_DIR are run directories (holding index.json) or trees of them, paired by relative path. Prints one
line per check, "OK <name>: ..." or "FAIL <name>: ...", and "INFO ..." lines for what is measured but not
judged; exits 1 when a check failed (2 on usage errors).

Checks:
  logits       prompt runs: max |logit_B - logit_A| over the prompt (positions < 512) and the decode steps,
               relative to the largest |logit_A|: within 1e-4 for F32 models computed in F32 throughout
               (--kv f32 --fa off), 2e-3 otherwise: F16 weights, or an F16 KV cache or flash attention (which
               rounds Q, K and V to F16), where scaling every RoPE output by 1+2^-23 (about one ulp,
               llama_check --attn-factor) already moves the logits of the F32 models by up to 7e-5, and by 1.3e-4
               at 1+2^-21, against 3e-7 and 6e-7 on the F32 path.
  counts       every run, on its own: the eval callback saw 2 x n_layer ROPE nodes (q and k) per llama_decode
               call and n_layer K-shift ROPE nodes when the cache was shifted. When B loaded the posenc backend:
               every ROPE node of each phase was computed by posenc (its counter difference equals the callback's
               count; runs without the callback: equals A's callback count for the phase, or 2 x n_layer per
               call) and none went back to ggml's CPU code (counter [4]); otherwise "no posenc backend".
  rope_inputs  far/shift runs with the same thread count: the inputs of layer L's q and k RoPE nodes are
               bitwise equal (nothing before them depends on RoPE; the K-shift's input, the cache that earlier
               RoPE nodes wrote, is only reported).
Information: the RoPE outputs of far/shift against a float64 evaluation of ggml's formula from the captured
inputs, positions, frequency factors and op_params (at 2^30 a float64 angle is good to ~1e-7 rad, so this
resolves ggml's float32 angle errors, not the last bit); B against A; the shifted keys against the keys
computed directly at the shifted positions.
"""
import sys

import numpy as np

from dumps import Dump, find_runs

MODE_NEOX, MODE_MROPE, MODE_IMROPE = 2, 8, 40


def rope_ref(x, pos, op, ff):
    """ggml's RoPE (ext_factor 0) in float64: x [.., n_tokens, n_heads, head_dim]; pos I32 (n_tokens, or
    4 x n_tokens section-major for M-RoPE); returns None for what it does not model (YaRN, vision)."""
    n_dims, mode = op["n_dims"], op["mode"]
    if float(op["ext_factor"]) != 0.0 or mode not in (0, MODE_NEOX, MODE_MROPE, MODE_IMROPE):
        return None
    base, scale, attn = float(op["freq_base"]), float(op["freq_scale"]), float(op["attn_factor"])
    half = n_dims // 2
    i = np.arange(half, dtype=np.float64)
    inv = base ** (-2.0 * i / n_dims) * scale
    if ff is not None:
        inv = inv / ff.reshape(-1)[:half].astype(np.float64)
    n_tok = x.shape[-3]
    pos = pos.reshape(-1).astype(np.float64)
    if mode & MODE_MROPE:
        s = op["sections"]
        p4 = pos.reshape(4, n_tok)
        sect = int(sum(s))
        sel = np.zeros(half, dtype=int)
        for k in range(half):
            sec = k % sect
            if mode == MODE_IMROPE:
                if sec % 3 == 1 and sec < 3 * s[1]:
                    sel[k] = 1
                elif sec % 3 == 2 and sec < 3 * s[2]:
                    sel[k] = 2
                elif sec % 3 == 0 and sec < 3 * s[0]:
                    sel[k] = 0
                else:
                    sel[k] = 3
            else:
                sel[k] = 0 if sec < s[0] else 1 if sec < s[0] + s[1] else 2 if sec < s[0] + s[1] + s[2] else 3
        theta = p4[sel, :].T * inv[None, :]  # (n_tok, half)
    else:
        theta = pos[:, None] * inv[None, :]
    c = np.cos(theta)[:, None, :] * attn
    sn = np.sin(theta)[:, None, :] * attn
    xd = x.astype(np.float64)
    out = xd.copy()
    if mode == 0:
        x0, x1 = xd[..., 0:n_dims:2], xd[..., 1:n_dims:2]
        out[..., 0:n_dims:2] = x0 * c - x1 * sn
        out[..., 1:n_dims:2] = x0 * sn + x1 * c
    else:
        x0, x1 = xd[..., :half], xd[..., half:n_dims]
        out[..., :half] = x0 * c - x1 * sn
        out[..., half:n_dims] = x0 * sn + x1 * c
    return out


def relerr(a, b, ref=None):
    ref = a if ref is None else ref
    scale = float(np.max(np.abs(ref))) or 1.0
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) / scale


class Report:
    def __init__(self, quiet):
        self.failed = 0
        self.quiet = quiet

    def check(self, ok, name, msg):
        print("%s %s: %s" % ("OK" if ok else "FAIL", name, msg))
        if not ok:
            self.failed += 1

    def info(self, msg):
        if not self.quiet:
            print("INFO " + msg)


def rope_records(d):
    out = []
    for r in d.ix["rope_nodes"]:
        x = d.get(r["input"])
        y = d.get(r["output"])
        pos = d.get(r["pos"])
        ff = d.get(r["freq_factors"]) if r["freq_factors"] else None
        out.append((r, x, y, pos, ff))
    return out


def self_checks(rep, rel, d):
    ix = d.ix
    n_layer = ix["n_layer"]
    if ix["eval_cb"]:
        bad = []
        for p in ix["phases"]:
            for k, call in enumerate(p["rope_cb_per_call"]):
                want = {"q": n_layer, "k": n_layer}
                if p["name"] == "shift_apply":
                    want["kshift"] = n_layer
                if call != want:
                    bad.append("%s call %d: %s, expected %s" % (p["name"], k, call, want))
        summary = ", ".join("%s %s" % (p["name"], p["rope_cb"]) for p in ix["phases"] if p["calls"])
        rep.check(not bad, "counts_cb %s" % rel,
                  ("ROPE nodes per graph as expected (2 x n_layer = %d per decode, n_layer = %d per K-shift): %s"
                   % (2 * n_layer, n_layer, summary)) if not bad else "; ".join(bad))
    if "skipped" in ix:
        rep.info("%s: skipped: %s" % (rel, ix["skipped"]))
    for r, x, y, pos, ff in rope_records(d):
        ref = rope_ref(x, pos, r["op_params"], ff)
        if ref is None:
            continue
        if r["kind"] == "kshift":
            cells = np.nonzero(pos.reshape(-1))[0]
            e = relerr(ref[:, cells], y[:, cells], ref[:, cells])
            where = "cells %d..%d shift %d" % (cells[0], cells[-1], pos.reshape(-1)[cells[0]]) if len(cells) else "no cells"
        else:
            e = relerr(ref, y, ref)
            where = "pos %d..%d" % (pos.reshape(-1)[0], pos.reshape(-1)[x.shape[-3] - 1])
        rep.info("%s: %s %s (%s, %s, mode %d, %s%s): |out - float64 ref| / max|ref| = %.3g"
                 % (rel, r["tag"], r["name"], r["type"], "in place" if r["inplace"] else "out of place",
                    r["op_params"]["mode"], where, ", freq factors" if ff is not None else "", e))
    if ix["subcommand"] == "shift" and "skipped" not in ix:
        recs = rope_records(d)
        ks = [t for t in recs if t[0]["kind"] == "kshift"]
        dk = [t for t in recs if t[0]["tag"] == "direct" and t[0]["kind"] == "k"]
        if ks and dk:
            pos = ks[0][3].reshape(-1)
            cells = np.nonzero(pos)[0]
            shifted = ks[0][2][0, cells]  # (n, heads, dims)
            direct = dk[0][2][0]
            if ix["kv"] == "f16":
                direct = direct.astype(np.float16).astype(np.float32)
            rep.info("%s: shifted keys vs keys computed at the shifted positions (KV %s, delta %d): max rel diff %.3g"
                     % (rel, ix["kv"], ix["delta"], relerr(direct, shifted)))
        if d.has("logits_after_shift") and d.has("logits_direct"):
            rep.info("%s: logits after the shift vs direct: max rel diff %.3g"
                     % (rel, relerr(d.get("logits_direct"), d.get("logits_after_shift"))))


def pair_checks(rep, rel, a, b):
    ia, ib = a.ix, b.ix
    tol = 1e-4 if a.f32_path() else 2e-3
    what = ("F32 weights, F32 KV, no flash attention" if a.f32_path() else
            "%s weights, %s KV, flash attention %s" % ("F16" if a.f16_weights() else "F32", ia["kv"],
                                                      ia.get("flash_attn_resolved", ia["flash_attn"])))
    if a.has("logits_prompt") and b.has("logits_prompt"):
        lpa, lpb = a.get("logits_prompt"), b.get("logits_prompt")
        lda, ldb = a.get("logits_decode"), b.get("logits_decode")
        n = min(lpa.shape[0], 512)
        scale = max(float(np.max(np.abs(lpa[:n]))), float(np.max(np.abs(lda))))
        ep = float(np.max(np.abs(lpa[:n].astype(np.float64) - lpb[:n]))) / scale
        ed = float(np.max(np.abs(lda.astype(np.float64) - ldb))) / scale
        rep.check(max(ep, ed) <= tol, "logits %s" % rel,
                  "max |B - A| / max|A| = %.3g (prompt), %.3g (decode); tolerance %g (%s; threads %d vs %d)"
                  % (ep, ed, tol, what, ia["threads"], ib["threads"]))
    # counts
    if not ib["posenc_backend"]:
        rep.info("%s: counts: no posenc backend in B" % rel)
    else:
        bad, parts = [], []
        for p in ib["phases"]:
            if p["calls"] == 0 and p["name"].startswith("init"):
                continue
            got = p["posenc"]["rope"] if p["posenc"] else None
            fallback = p["posenc"].get("cpu_fallback", 0) if p["posenc"] else 0
            if p["rope_cb"] is not None:
                want, how = p["rope_cb"], "callback"
            elif a.phase(p["name"]) and a.phase(p["name"])["rope_cb"] is not None:
                want, how = a.phase(p["name"])["rope_cb"], "A's callback"
            else:
                want = 2 * ib["n_layer"] * p["calls"] + (ib["n_layer"] if p["name"] == "shift_apply" else 0)
                how = "expected"
            parts.append("%s %s/%s" % (p["name"], got, want))
            if got != want:
                bad.append("%s: posenc computed %s ROPE nodes, %s %s" % (p["name"], got, how, want))
            if fallback:
                bad.append("%s: posenc handed %d node(s) back to ggml's CPU code" % (p["name"], fallback))
        rep.check(not bad, "counts_posenc %s" % rel, "posenc/all ROPE nodes: " + ", ".join(parts) if not bad
                  else "; ".join(bad))
    # RoPE inputs and outputs
    ra, rb = rope_records(a), rope_records(b)
    if ra and len(ra) == len(rb):
        same_threads = ia["threads"] == ib["threads"]
        worst_in = 0.0
        for (r1, x1, y1, p1, f1), (r2, x2, y2, p2, f2) in zip(ra, rb):
            if r1["name"] != r2["name"] or r1["tag"] != r2["tag"] or x1.shape != x2.shape:
                rep.check(False, "rope_inputs %s" % rel, "RoPE nodes differ: %s/%s vs %s/%s"
                          % (r1["tag"], r1["name"], r2["tag"], r2["name"]))
                return
            if r1["kind"] != "kshift":  # the K-shift rotates the cache, which earlier RoPE nodes wrote
                worst_in = max(worst_in, float(np.max(np.abs(x1.astype(np.float64) - x2))))
            rep.info("%s: %s %s: B vs A output max rel diff %.3g, input max abs diff %.3g"
                     % (rel, r1["tag"], r1["name"], relerr(y1, y2), float(np.max(np.abs(x1.astype(np.float64) - x2)))))
        if same_threads:
            rep.check(worst_in == 0.0, "rope_inputs %s" % rel,
                      "RoPE inputs of layer %d bitwise equal in A and B (%d nodes, K-shift's excluded)"
                      % (ia["layer"], len(ra))
                      if worst_in == 0.0 else "RoPE inputs differ by up to %.3g" % worst_in)
        else:
            rep.info("%s: RoPE inputs, threads %d vs %d: max abs diff %.3g" % (rel, ia["threads"], ib["threads"], worst_in))
    elif ra or rb:
        rep.check(False, "rope_inputs %s" % rel, "%d RoPE nodes in A, %d in B" % (len(ra), len(rb)))
    for name in sorted(set(a.meta) & set(b.meta)):
        if name.startswith("logits_far") or name in ("logits_after_shift", "logits_direct"):
            rep.info("%s: %s: B vs A max rel diff %.3g" % (rel, name, relerr(a.get(name), b.get(name))))


def main(argv):
    quiet = "--quiet" in argv
    args = [x for x in argv[1:] if x != "--quiet"]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    ra, rb = find_runs(args[0]), find_runs(args[1])
    if not ra or not rb:
        print("compare.py: no index.json under %s" % (args[0] if not ra else args[1]), file=sys.stderr)
        return 2
    rep = Report(quiet)
    for rel in sorted(set(ra) | set(rb)):
        if rel not in ra or rel not in rb:
            rep.check(False, "runs %s" % rel, "only in %s" % ("A" if rel in ra else "B"))
            continue
        a, b = Dump(ra[rel]), Dump(rb[rel])
        self_checks(rep, rel + " (A)", a)
        if ra[rel] != rb[rel]:
            self_checks(rep, rel + " (B)", b)
        pair_checks(rep, rel, a, b)
    print("compare.py: %d check(s) failed" % rep.failed if rep.failed else "compare.py: all checks passed")
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
