"""What the numbers were measured on: CPU, its SIMD flags, compiler and library versions, date, load."""
import os
import platform
import subprocess

SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512dq", "avx512cd", "avx512bw",
              "avx512vl", "avx512_bf16", "avx512_fp16", "asimd", "fphp", "asimdhp", "sve")


def _cpuinfo():
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if ":" in line:
                    k, v = line.split(":", 1)
                    info.setdefault(k.strip(), v.strip())
    except OSError:
        pass
    return info


def _pkg_version(name):
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", name], capture_output=True, text=True)
        return out.stdout.strip() or None
    except OSError:
        return None


def _matplotlib_version():
    """Debian's package version where there is one (what report.sh installs), else the module's own."""
    v = _pkg_version("python3-matplotlib")
    if v:
        return v
    try:
        import matplotlib
        return matplotlib.__version__
    except ImportError:
        return "not installed"


def describe(context, accuracy):
    """A list of (label, value) rows."""
    ci = _cpuinfo()
    flags = set((ci.get("flags") or ci.get("Features") or "").split())
    model = ci.get("model name") or ci.get("CPU part") or platform.processor() or "unknown"
    if "cpu family" in ci:
        model += " (family %s, model %s, stepping %s)" % (ci.get("cpu family"), ci.get("model"),
                                                          ci.get("stepping"))
    caches = ", ".join("L%d%s %d KiB" % (c["level"], {"Data": "d", "Instruction": "i"}.get(c["type"], ""),
                                          c["size"] // 1024)
                       for c in context.get("caches", []))
    load = context.get("load_avg", [])
    rows = [
        ("date", context.get("date", "?")),
        ("CPU", model),
        ("CPUs, MHz", "%s, %s" % (context.get("num_cpus", os.cpu_count()), context.get("mhz_per_cpu", "?"))),
        ("caches", caches or "?"),
        ("SIMD flags", " ".join(f for f in SIMD_FLAGS if f in flags) or "-"),
        ("kernel", platform.release()),
        ("load average at start", " ".join("%.2f" % x for x in load) if load else "?"),
        ("compiler", context.get("compiler", "?")),
        ("posenc", "%s, paths %s" % (context.get("posenc_version", "?"), context.get("posenc_paths", "?"))),
        ("SLEEF", context.get("sleef", "?")),
        ("xsimd", context.get("xsimd", "?")),
        ("Google Benchmark", context.get("google_benchmark", "?")),
        ("glibc (memset, memcpy, libm)", context.get("glibc", "?")),
        ("MPFR", accuracy.get("mpfr", "?") if accuracy else "?"),
        ("matplotlib", _matplotlib_version()),
        ("plan", context.get("plan", "?")),
    ]
    return rows
