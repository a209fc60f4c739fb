#!/usr/bin/env python3
"""Generate change-point test vectors for Liftoff's history analysis from Apache Otava.

Writes Tests/LiftoffHistoryTests/ChangePointVectors.swift (relative to the repository root):
series with Otava's `compute_change_points` result (index, means before and after, p-value) for
the window, p-value and magnitude given.

Usage: make changepoint-vectors   (a virtual environment with apache-otava, NumPy and SciPy)

Values are rounded to 4 decimals before Otava sees them, so that each one's shortest repr is a
decimal literal Swift parses to the same double. The generator is seeded: re-running with the
same Otava, SciPy and NumPy reproduces the file byte for byte.
"""

from importlib.metadata import version
from pathlib import Path

import numpy as np
from otava.analysis import compute_change_points

SEED = 20_261_128
OUTPUT = Path(__file__).resolve().parent.parent / "Tests/LiftoffHistoryTests/ChangePointVectors.swift"


# Apache Otava's TigerBeetle series (tests/tigerbeetle_test.py).
TIGERBEETLE = [26705, 26475, 26641, 26806, 26835, 26911, 26564, 26812, 26874, 26682, 15672, 26745, 26460, 26977, 26851, 23412, 23547, 23674, 23519, 23670, 23662, 23462, 23750, 23717, 23524, 23588, 23687, 23793, 23937, 23715, 23570, 23730, 23690, 23699, 23670, 23860, 23988, 23652, 23681, 23798, 23728, 23604, 23523, 23412, 23685, 23773, 23771, 23718, 23409, 23739, 23674, 23597, 23682, 23680, 23711, 23660, 23990, 23938, 23742, 23703, 23536, 24363, 24414, 24483, 24509, 24944, 24235, 24560, 24236, 24667, 24730, 28346, 28437, 28436, 28057, 28217, 28456, 28427, 28398, 28250, 28331, 28222, 28726, 28578, 28345, 28274, 28514, 28590, 28449, 28305, 28411, 28788, 28404, 28821, 28580, 27483, 26805, 27487, 27124, 26898, 27295, 26951, 27312, 27660, 27154, 27050, 26989, 27193, 27503, 27326, 27375, 27513, 27057, 27421, 27574, 27609, 27123, 27824, 27644, 27394, 27836, 27949, 27702, 27457, 27272, 28207, 27802, 27516, 27586, 28005, 27768, 28543, 28237, 27915, 28437, 28342, 27733, 28296, 28524, 28687, 28258, 28611, 29360, 28590, 29641, 28965, 29474, 29256, 28611, 28205, 28539, 27962, 28398, 28509, 28240, 28592, 28102, 28461, 28578, 28669, 28507, 28535, 28226, 28536, 28561, 28087, 27953, 28398, 28007, 28518, 28337, 28242, 28607, 28545, 28514, 28377, 28010, 28412, 28633, 28576, 28195, 28637, 28724, 28466, 28287, 28719, 28425, 28860, 28842, 28604, 28327, 28216, 28946, 28918, 29287, 28725, 29148, 29541, 29137, 29628, 29087, 28612, 29154, 29108, 28884, 29234, 28695, 28969, 28809, 28695, 28634, 28916, 29852, 29389, 29757, 29531, 29363, 29251, 29552, 29561, 29046, 29795, 29022, 29395, 28921, 29739, 29257, 29455, 29376, 29528, 28909, 29492, 28984, 29621, 29026, 29457, 29102, 29114, 28924, 29162, 29259, 29554, 29616, 29211, 29367, 29460, 28836, 29645, 29586, 28848, 29324, 28969, 29150, 29243, 29081, 29312, 28923, 29272, 29117, 29072, 29529, 29737, 29652, 29612, 29856, 29012, 30402, 29969, 29309, 29439, 29285, 29421, 29023, 28772, 29692, 29416, 29267, 29542, 29904, 30045, 29739, 29945, 29141, 29163, 29765, 29197, 29441, 28910, 29504, 29614, 29643, 29506, 29420, 29672, 29432, 29784, 29888, 29309, 29247, 29816, 29254, 29813, 29451, 29382, 29618, 28558, 29845, 29499, 29283, 29184, 29246, 28790, 29952, 29145, 29415, 30437, 29227, 29605, 29859, 29156, 29807, 29406, 29734, 29861, 29140, 29983, 29832, 29919, 29896, 29991, 29266, 29001, 29459, 29548, 29310, 29042, 29303, 29894, 29091, 29018, 29537, 29614, 29180, 29736, 29500, 29218, 29581, 28906, 28542, 29306, 28987, 29878, 28865, 30272, 29707, 29662, 29815, 30492, 29347, 30096, 29054, 30238, 28813, 31895, 28915]


def rounded(values):
    return [float(v) + 0.0 for v in np.round(np.asarray(values, dtype=float), 4)]


def cases():
    rng = np.random.default_rng(SEED)
    out = []
    # Small series written out, as in Otava's own tests: steps up and down, a lone outlier, flat.
    out.append(("two steps", [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2], 50, 0.001, 0.0))
    out.append(("steps with noise", [0.9, 1.1, 1.0, 1.05, 0.95, 2.1, 1.9, 2.0, 2.05, 1.95, 1.0, 1.02, 0.98, 1.01, 0.99], 50, 0.01, 0.0))
    out.append(("flat", [1.0] * 30, 50, 0.001, 0.0))
    out.append(("one outlier", [1.0, 1.01, 0.99, 1.0, 5.0, 1.0, 1.01, 0.99, 1.0, 1.0, 0.98, 1.02], 50, 0.001, 0.0))
    # Apache Otava's own test series (tests/analysis_test.py and tests/tigerbeetle_test.py, Apache
    # License 2.0): a halving at index 10, and a benchmark's history with its steps, an outlier and
    # a slope, under each window, p-value and magnitude those tests use.
    out.append(("Otava: single series", [1.02, 0.95, 0.99, 1.00, 1.12, 1.00, 1.01, 0.98, 1.01, 0.96,
                                         0.50, 0.51, 0.48, 0.48, 0.55, 0.50, 0.49, 0.51, 0.50, 0.49], 10, 0.0001, 0.0))
    for pvalue, magnitude in [(0.01, 0.05), (0.05, 0.05), (0.1, 0.05), (0.2, 0.05), (0.2, 0.0), (0.1, 0.0),
                              (0.01, 0.0), (0.001, 0.0), (0.0001, 0.0), (0.00001, 0.0)]:
        out.append((f"Otava: TigerBeetle, p {pvalue:g}, magnitude {magnitude:g}", [float(v) for v in TIGERBEETLE], 30, pvalue, magnitude))
    # Seeded: launches of about 100 ms with steps, noise and windows of every size in use.
    for i in range(24):
        length = int(rng.integers(20, 220))
        noise = float(rng.choice([0.0005, 0.003, 0.0085, 0.03]))
        steps = int(rng.integers(0, 4))
        base = 100.0
        level = np.full(length, base)
        for position in sorted(rng.integers(5, max(6, length - 5), steps)):
            level[position:] *= 1 + float(rng.choice([-1, 1])) * float(rng.uniform(0.01, 0.12))
        series = level * (1 + rng.normal(0, noise, length))
        window = int(rng.choice([10, 30, 50]))
        pvalue = float(rng.choice([0.001, 0.01, 0.05]))
        magnitude = float(rng.choice([0.0, 0.0, 0.01]))
        out.append((f"seeded {i}: {length} points, {steps} steps, {noise * 100:g} % noise", rounded(series), window, pvalue, magnitude))
    # A slow drift, and instruction counts (large values, little noise).
    drift = 100 * (1 + np.linspace(0, 0.1, 120)) * (1 + rng.normal(0, 0.002, 120))
    out.append(("drift", rounded(drift), 50, 0.001, 0.0))
    counts = np.concatenate([np.full(40, 23_780_000.0), np.full(40, 24_250_000.0)]) + rng.normal(0, 500, 80)
    out.append(("instruction counts", rounded(counts), 50, 0.001, 0.0))
    return out


def swift_double(value):
    if value != value:
        return ".nan"
    return repr(float(value))


def main():
    lines = [
        f"// Generated by scripts/changepoint_vectors.py from apache-otava {version('apache-otava')} "
        f"(NumPy {np.__version__}, seed {SEED}); do not edit.",
        "",
        "/// Series with the change points Apache Otava's `compute_change_points` finds in them.",
        "enum ChangePointVectors {",
        "    struct Expected {",
        "        var index: Int",
        "        var meanBefore: Double",
        "        var meanAfter: Double",
        "        var pValue: Double",
        "    }",
        "",
        "    struct Case {",
        "        var name: String",
        "        var windowLength: Int",
        "        var maxPValue: Double",
        "        var minMagnitude: Double",
        "        var series: [Double]",
        "        var expected: [Expected]",
        "    }",
        "",
        "    static let cases: [Case] = [",
    ]
    for name, series, window, pvalue, magnitude in cases():
        values = [float(v) for v in series]
        points, _ = compute_change_points(list(values), window_len=window, max_pvalue=pvalue, min_magnitude=magnitude)
        expected = ", ".join(
            f"Expected(index: {int(p.index)}, meanBefore: {swift_double(p.stats.mean_1)}, "
            f"meanAfter: {swift_double(p.stats.mean_2)}, pValue: {swift_double(p.stats.pvalue)})"
            for p in points
        )
        lines.append("        Case(")
        lines.append(f"            name: {name!r}, windowLength: {window}, maxPValue: {pvalue!r}, minMagnitude: {magnitude!r},".replace("'", '"'))
        lines.append(f"            series: [{', '.join(swift_double(v) for v in values)}],")
        lines.append(f"            expected: [{expected}]),")
    lines += ["    ]", "}", ""]
    OUTPUT.write_text("\n".join(lines))


if __name__ == "__main__":
    main()
