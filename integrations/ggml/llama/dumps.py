"""The dumps of llama_check (integrations/ggml/llama/llama_check.cpp) as compare.py and exact.py read them: a
run directory holds index.json and the captured arrays, one raw little-endian file each."""
import json
import os

import numpy as np


class Dump:
    def __init__(self, d):
        self.dir = d
        with open(os.path.join(d, "index.json")) as f:
            self.ix = json.load(f)
        self.meta = {a["name"]: a for a in self.ix["arrays"]}

    def has(self, name):
        return name in self.meta

    def get(self, name):
        a = self.meta[name]
        dt = {"f32": "<f4", "i32": "<i4", "f16": "<f2"}[a["dtype"]]
        return np.fromfile(os.path.join(self.dir, a["file"]), dtype=dt).reshape(a["shape"])

    def f16_weights(self):
        return " F16" in self.ix["model_desc"] or self.ix["model"].endswith("f16.gguf")

    def f32_path(self):
        """F32 weights and an F32 attention: F32 KV cache and no flash attention (llama-graph.cpp casts an
        F32 K/V to F16 for ggml_flash_attn_ext, whose CPU kernel also rounds Q to F16)."""
        return (not self.f16_weights() and self.ix["kv"] == "f32"
                and self.ix.get("flash_attn_resolved", self.ix["flash_attn"]) == "disabled")

    def phase(self, name):
        for p in self.ix["phases"]:
            if p["name"] == name:
                return p
        return None


def find_runs(root):
    """The run directories (holding index.json) of a tree, by path relative to root."""
    runs = {}
    for d, _, files in os.walk(root):
        if "index.json" in files:
            runs[os.path.relpath(d, root)] = d
    return runs
