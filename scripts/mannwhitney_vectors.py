#!/usr/bin/env python3
"""Generate Mann-Whitney U test vectors for Liftoff's Swift statistics from SciPy.

Writes Tests/LiftoffReportsTests/MannWhitneyVectors.swift (relative to the repository root):
pairs of samples with SciPy's two-sided `mannwhitneyu` statistic and p-value under its
defaults (method="auto", use_continuity=True).

Usage: python3 scripts/mannwhitney_vectors.py   (needs numpy and scipy)

Sample values are rounded to 3 decimals so their shortest repr is a decimal literal that
Swift parses to the same double. The random generator is seeded, so re-running with the same
SciPy and NumPy versions reproduces the file byte for byte.
"""

from pathlib import Path

import numpy as np
import scipy
from scipy.stats import mannwhitneyu

SEED = 20_260_521
OUTPUT = Path(__file__).resolve().parent.parent / "Tests/LiftoffReportsTests/MannWhitneyVectors.swift"
LINE_WIDTH = 108


def rounded(values, decimals=3):
    """Round to `decimals` places and return plain Python floats (normalizing -0.0 to 0.0)."""
    return [float(v) + 0.0 for v in np.round(np.asarray(values, dtype=float), decimals)]


def has_ties(x, y):
    values = x + y
    return len(set(values)) != len(values)


def cases(rng):
    """Yield (label, x, y) pairs."""

    def normal(n, mean, sd, decimals=3):
        return rounded(rng.normal(mean, sd, n), decimals)

    def distinct(n, low, high):
        """n distinct values drawn from low/1000 ... high/1000 in steps of 0.001."""
        return rounded(rng.choice(np.arange(low, high), n, replace=False) / 1000)

    # Small samples without ties: exact null distribution (min(n1, n2) <= 8).
    yield "SciPy docs example 5 vs 4", [19.0, 22.0, 16.0, 29.0, 24.0], [20.0, 11.0, 17.0, 12.0]
    yield "1 vs 1, p clipped to 1", [1.0], [2.0]
    yield "1 vs 6", [3.5], [1.25, 2.0, 4.0, 5.5, 6.0, 7.0]
    yield "2 vs 2 separated", [1.0, 2.0], [3.0, 4.0]
    yield "2 vs 2 at the centre, U = n1*n2/2, p clipped to 1", [1.0, 4.0], [2.0, 3.0]
    yield "3 vs 3 separated", [10.0, 11.0, 12.0], [20.0, 21.0, 22.0]
    pool = distinct(9, 0, 100_000)
    yield "4 vs 5 interleaved", pool[:4], pool[4:]
    pool = distinct(10, 0, 100_000)
    yield "5 vs 5 random", pool[:5], pool[5:]
    pool = distinct(13, 0, 100_000)
    yield "6 vs 7 random", pool[:6], pool[6:]
    pool = distinct(15, 0, 100_000)
    yield "7 vs 8 random", pool[:7], pool[7:]
    yield "8 vs 8 separated", [float(v) for v in range(1, 9)], [float(v) for v in range(9, 17)]
    pool = distinct(38, 100_000, 200_000)
    yield "8 vs 30 random, larger side above 8", pool[:8], pool[8:]
    pool = distinct(43, 100_000, 200_000)
    yield "40 vs 3 random, small side second", pool[:40], pool[40:]
    yield (
        "8 vs 60 separated, p ~ 1e-10",
        rounded(np.arange(8) * 0.5 + 100),
        rounded(np.arange(60) * 0.25 + 200),
    )
    yield "1 vs 60", [150.0], distinct(60, 100_000, 200_000)
    pool = rounded(-np.sort(rng.choice(np.arange(1, 100_000), 12, replace=False)) / 100)
    yield "negative values 6 vs 6", pool[::2], pool[1::2]

    # Small samples with ties: asymptotic even though n <= 8.
    yield "2 vs 2 with a shared value", [1.0, 2.0], [2.0, 3.0]
    yield "1 vs 1 equal, p = 1", [7.0], [7.0]
    yield "3 vs 3 ties within and across", [1.0, 1.0, 2.0], [2.0, 3.0, 3.0]
    yield "5 vs 5 integers with ties", normal(5, 10, 2, 0), normal(5, 12, 2, 0)
    yield "one side all equal, 3 vs 4", [5.0, 5.0, 5.0], [1.0, 2.0, 3.0, 4.0]
    yield "all values identical 3 vs 4, p = 1", [3.0] * 3, [3.0] * 4

    # Large samples (both n > 8): asymptotic.
    yield "20 vs 20 same distribution", normal(20, 100, 5), normal(20, 100, 5)
    yield "20 vs 20 10% slower", normal(20, 100, 5), normal(20, 110, 5.5)
    yield "30 vs 45 n1 != n2", normal(30, 250, 20), normal(45, 240, 20)
    yield "60 vs 60 same distribution", normal(60, 1000, 50), normal(60, 1000, 50)
    yield "25 vs 60 small shift", normal(25, 50, 4), normal(60, 51, 4)
    yield "9 vs 9 just above the exact cut-off", normal(9, 10, 1), normal(9, 11, 1)
    yield "40 vs 40 integers, many ties", normal(40, 100, 3, 0), normal(40, 101, 3, 0)
    yield "50 vs 35 one decimal, ties", normal(50, 20, 1, 1), normal(35, 20.3, 1, 1)
    yield (
        "30 vs 30 three distinct values",
        rounded(rng.choice([1.0, 2.0, 3.0], 30)),
        rounded(rng.choice([1.0, 2.0, 3.0], 30, p=[0.2, 0.3, 0.5])),
    )
    sample = normal(30, 100, 5)
    yield "identical samples 30 vs 30", sample, list(sample)
    sample = normal(6, 100, 5)
    yield "identical samples 6 vs 6", sample, list(sample)
    yield "one side all equal, 20 vs 20", [100.0] * 20, normal(20, 100, 5)
    yield "all values identical 25 vs 30, p = 1", [42.0] * 25, [42.0] * 30
    yield "very different scales, 20 vs 20 separated", normal(20, 0.005, 0.001), normal(20, 1e6, 1e5)
    yield (
        "wide log-uniform scales 30 vs 30",
        rounded(10 ** rng.uniform(-3, 6, 30)),
        rounded(10 ** rng.uniform(-2, 6, 30)),
    )
    yield "negative values 25 vs 35", normal(25, -50, 10), normal(35, -45, 10)
    yield "40 vs 40 separated, p ~ 1e-14", normal(40, 100, 1), normal(40, 200, 1)
    yield "60 vs 60 separated, p ~ 1e-21", normal(60, 10, 0.5), normal(60, 20, 0.5)
    yield (
        "12 vs 50 separated with ties",
        rounded(rng.choice([1.0, 2.0], 12)),
        rounded(rng.choice([5.0, 6.0, 7.0], 50)),
    )


def swift_array(values, indent):
    """A Swift array literal of doubles, wrapped to LINE_WIDTH."""
    items = [repr(v) for v in values]
    lines, line = [], ""
    for item in items:
        piece = item + ", "
        if line and len(indent) + 4 + len(line) + len(piece.rstrip()) > LINE_WIDTH:
            lines.append(line.rstrip())
            line = ""
        line += piece
    lines.append(line.rstrip().rstrip(","))
    if len(lines) == 1:
        return "[" + lines[0] + "]"
    body = "\n".join(indent + "    " + text for text in lines)
    return "[\n" + body + ",\n" + indent + "]"


def main():
    rng = np.random.default_rng(SEED)
    entries = []
    for label, x, y in cases(rng):
        result = mannwhitneyu(x, y, alternative="two-sided")
        u, p = float(result.statistic), float(result.pvalue)
        method = "exact" if min(len(x), len(y)) <= 8 and not has_ties(x, y) else "asymptotic"
        indent = "        "
        entries.append(
            f"    // {label} [{method}]\n"
            f"    (\n"
            f"        x: {swift_array(x, indent)},\n"
            f"        y: {swift_array(y, indent)},\n"
            f"        u: {u!r}, p: {p!r}\n"
            f"    ),\n"
        )
    header = (
        f"// Generated by scripts/mannwhitney_vectors.py from SciPy {scipy.__version__} "
        f"(NumPy {np.__version__}, seed {SEED}); do not edit.\n"
        "// Each case: scipy.stats.mannwhitneyu(x, y, alternative=\"two-sided\") with its defaults\n"
        "// (method=\"auto\", use_continuity=True); u is SciPy's statistic (the U of x), p the p-value.\n\n"
        f"/// {len(entries)} Mann–Whitney U cases computed by SciPy.\n"
        "let mannWhitneyVectors: [(x: [Double], y: [Double], u: Double, p: Double)] = [\n"
    )
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(header + "".join(entries) + "]\n")
    print(f"wrote {len(entries)} cases to {OUTPUT}")


if __name__ == "__main__":
    main()
