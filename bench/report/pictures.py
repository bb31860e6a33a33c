"""Pictures of the encoding itself: the PE table as a heatmap, and the cosine similarity of positions.

    pictures.py --posenc build/cli/posenc --out report [--positions 512] [--d-model 200] [table options]

The table comes from `posenc table` (written as .npy, read with NumPy); any other option is passed to it.
"""
import argparse
import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

plt.rcParams["svg.hashsalt"] = "posenc"


def heatmap(values, xlabel, ylabel, title, cmap, size, path, low=-1.0):
    fig, ax = plt.subplots(figsize=size)
    im = ax.imshow(values, aspect="auto", cmap=cmap, vmin=low, vmax=1, interpolation="nearest")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--posenc", required=True, help="the posenc command")
    ap.add_argument("--out", required=True)
    ap.add_argument("--positions", type=int, default=512)
    ap.add_argument("--d-model", type=int, default=200)
    args, spec = ap.parse_known_args(argv)
    os.makedirs(args.out, exist_ok=True)
    npy = os.path.join(args.out, "pe_%dx%d.npy" % (args.positions, args.d_model))
    subprocess.run([args.posenc, "table", "--d-model", str(args.d_model), "--positions", str(args.positions),
                    "--format", "npy", "--output", npy] + spec, check=True)
    pe = np.load(npy)
    what = "d = %d, %d positions%s" % (args.d_model, args.positions, (", " + " ".join(spec)) if spec else "")

    heatmap(pe, "dimension", "position", "Sinusoidal positional encoding (" + what + ")", "RdBu", (8, 5),
            os.path.join(args.out, "pe_heatmap.svg"))
    # cosine similarity of every pair of positions: how much position p "looks like" position q
    unit = pe / np.maximum(np.linalg.norm(pe, axis=1, keepdims=True), 1e-30)
    sim = unit @ unit.T
    heatmap(sim, "position", "position", "Cosine similarity of PE rows (" + what + ")", "viridis", (6.5, 5.5),
            os.path.join(args.out, "pe_cosine_similarity.svg"), low=float(sim.min()))
    print("wrote %s, pe_heatmap.svg, pe_cosine_similarity.svg in %s" % (os.path.basename(npy), args.out))


if __name__ == "__main__":
    main(sys.argv[1:])
