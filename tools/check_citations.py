#!/usr/bin/env python3
"""Fails when a comment or a document cites a file of this repository that a clone does not have.

    check_citations.py ROOT

Reads every text file git tracks under ROOT (or every file, outside a git checkout) and checks three kinds of
citation:
  1. paths into the repository's own directories (lib/kernel/values_rows.hpp, docs/rope.md, tests/support/...): the
     file or directory must exist;
  2. documents of the project's history that never were in the clone (CONTRACT.md, STYLE.md,
     KERNEL-NOTES.md, ROPE-NOTES.md): always an error, whatever the path in front of them;
  3. a bare source or document name (values_rows.hpp, math.md): some file of that name must exist, unless the
     line is about another project's code (it names ggml, HF, fairseq, ...), and "name.hpp, symbol" (the
     code's way of pointing at a function) must name a symbol that file contains.
Prints each bad citation as path:line: message and exits 1 when there is one.
"""
import os
import re
import subprocess

import checks

OUTSIDE = ("CONTRACT.md", "STYLE.md", "KERNEL-NOTES.md", "ROPE-NOTES.md")
TEXT = (".c", ".h", ".cpp", ".hpp", ".py", ".pyi", ".sh", ".md", ".build", ".txt", ".ini", ".toml", ".in", ".cmake")
# A line that names one of these is about another project's files, whose names posenc's need not match.
UPSTREAM = re.compile(
    r"ggml|llama\.cpp|llama-|HF\b|hugging|transformers|fairseq|diffusers|vLLM|vllm|upstream|simdjson|Highway|hwy/|"
    r"xsimd|SLEEF|sleef|Pixman|pixman|pytorch|torch|mistral|Flux|flux|DiT|whisper|Whisper|ONNX|onnx|CTranslate2|"
    r"ctranslate|ORT\b|glibc|qemu|QEMU|Debian|test-backend-ops|github|meson-python|mesonpy|numpy|pybind11|"
    r"tensor2tensor|OpenNMT|Marian|tutorial|Qwen|qwen|Pixtral|pixtral|Llama|GLM|stable-diffusion|embeddings\.py|"
    r"modeling_|catch2|Catch2|benchmark|CMake|cmake", re.I)
CITED_PATH = re.compile(r"(?<![\w./$>}-])(\.?[A-Za-z_][\w.-]*(?:/[\w.-]+)+)")
BARE = re.compile(r"(?<![\w./-])([A-Za-z_][\w-]*\.(?:hpp|cpp|h|md|py|sh))(?![\w/])")
SYMBOL = re.compile(r"(?<![\w./-])([A-Za-z_]\w*\.(?:hpp|cpp|h)), `?((?:[A-Za-z_]\w*::)*[A-Za-z_]\w*)\b(?!\.\w)`?")
# Headers of the system and of other libraries, and files the build generates: not in the repository.
NOT_OURS = {"immintrin.h", "xmmintrin.h", "arm_neon.h", "pthread.h", "unistd.h", "fcntl.h", "spawn.h", "dlfcn.h",
            "stdio.h", "stdlib.h", "string.h", "math.h", "time.h", "stdint.h", "mpfr.h", "gmp.h", "sleef.h",
            "posenc_version.h", "qemu-plugin.h", "ggml.h", "ggml-cpu.h", "ggml-backend.h"}
# Paths in an install prefix, not in the source tree (cmake/meson.build puts the CMake package there).
INSTALLED = re.compile(r"^lib(64)?/(cmake|pkgconfig|x86_64|aarch64)|^(bin|libexec|share)/")


def tracked(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], check=True, capture_output=True, text=True).stdout
        return [p for p in out.splitlines() if p]
    except (OSError, subprocess.CalledProcessError):
        found = []
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith((".", "build"))]
            found += [os.path.relpath(os.path.join(d, f), root) for f in files]
        return found


def comment_text(rel, lines):
    """The lines as a reader sees the citations: whole for documents; for code, only its comments (code
    itself is checked by the compiler, and `rope_.h()` or `#include <mpfr.h>` cite nothing)."""
    if rel.endswith((".md", ".txt")):
        return lines
    out = []
    if rel.endswith((".c", ".h", ".cpp", ".hpp", ".in", ".cmake")) and not rel.endswith(".build"):
        in_block = False
        for line in lines:
            text = ""
            rest = line
            while rest:
                if in_block:
                    end = rest.find("*/")
                    if end < 0:
                        text += rest
                        rest = ""
                    else:
                        text += rest[:end]
                        rest = rest[end + 2:]
                        in_block = False
                else:
                    a, b = rest.find("//"), rest.find("/*")
                    if a < 0 and b < 0:
                        rest = ""
                    elif b < 0 or (0 <= a < b):
                        text += rest[a + 2:]
                        rest = ""
                    else:
                        in_block = True
                        rest = rest[b + 2:]
            out.append(text)
        return out
    in_doc = False
    for line in lines:  # Python, shell, meson: '#' comments, and Python's docstrings
        if rel.endswith((".py", ".pyi")) and (in_doc or line.lstrip().startswith(('"""', "r\"\"\""))):
            quotes = line.count('"""')
            out.append(line)
            if in_doc:
                in_doc = quotes % 2 == 0
            else:
                in_doc = quotes % 2 == 1
            continue
        i = line.find("#")
        out.append(line[i + 1:] if i >= 0 else "")
    return out


def looks_like_code_symbol(name):
    return "_" in name or "::" in name or re.search(r"[a-z][A-Z]", name) or name[:1].isupper()


def check(root):
    files = tracked(root)
    top = {p.split("/")[0] for p in files if "/" in p}
    by_name = {}
    for p in files:
        by_name.setdefault(os.path.basename(p), []).append(p)
    bad = []
    for rel in files:
        if not rel.endswith(TEXT) or rel.startswith("fuzz/corpus/") or rel == "tools/check_citations.py":
            continue  # the seeds are binary; this file names the outside documents to find them
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as fh:
                lines = fh.read().splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        for no, line in enumerate(comment_text(rel, lines), 1):
            for name in OUTSIDE:
                if re.search(r"(?<![\w-])" + re.escape(name), line):
                    bad.append("%s:%d: cites %s, which is not in the repository" % (rel, no, name))
            # a line is about another project's files when it, or the line before, names one
            about_upstream = UPSTREAM.search(line) is not None or (
                no >= 2 and UPSTREAM.search(comment_text(rel, lines[no - 2:no - 1])[0] or "") is not None)
            for m in CITED_PATH.finditer(line):
                path = m.group(1).rstrip(".,:;)")
                first = path.split("/")[0]
                if first not in top or "://" in line[max(0, m.start() - 8):m.start() + 3]:
                    continue
                path = re.sub(r":\d+$", "", path)
                if "*" in path or "<" in path or "{" in path or line[m.end():m.end() + 1] in ("*", "<", "{"):
                    continue
                if INSTALLED.search(path) or os.path.exists(os.path.join(root, path)):
                    continue
                if "." not in os.path.basename(path) and any(
                        os.path.exists(os.path.join(root, path + ext)) for ext in (".cpp", ".c", ".py")):
                    continue  # a program named after its source (fuzz/fuzz_api)
                if about_upstream:
                    continue
                bad.append("%s:%d: cites %s, which does not exist" % (rel, no, path))
            for m in BARE.finditer(line):
                name = m.group(1)
                if name in OUTSIDE or name in by_name or name in NOT_OURS or about_upstream:
                    continue
                bad.append("%s:%d: cites %s, which no file of the repository is called" % (rel, no, name))
            for m in SYMBOL.finditer(line):
                name, symbol = m.group(1), m.group(2)
                if name not in by_name or not looks_like_code_symbol(symbol) or about_upstream:
                    continue
                leaf = symbol.split("::")[-1]
                texts = []
                for p in by_name[name]:
                    with open(os.path.join(root, p), encoding="utf-8", errors="replace") as fh:
                        texts.append(fh.read())
                if not any(re.search(r"\b" + re.escape(leaf) + r"\b", t) for t in texts):
                    bad.append("%s:%d: cites %s, %s, which that file does not define" % (rel, no, name, symbol))
    return bad, "%d files, %d bad citations" % (len(files), len(bad))


if __name__ == "__main__":
    checks.run(check, __doc__)
