#!/usr/bin/env python3
"""Records `liftoff demo` launches under `perf record -e cpu-clock -g` while Liftoff samples them
too, and compares the two on-CPU leaf-function distributions of the main thread (total-variation
distance: half the sum of the absolute differences of the shares; 0 is identical, 1 disjoint).

usage: [LAUNCHES=3] perf_agreement.py LIFTOFF_BINARY OUT.md|OUT.json [DEMO ARGS...]
Writes a Markdown table, or with a .json name {"launches": [ROW...], "pooled": ROW}, each ROW
{"liftoff", "liftoffRows", "perf", "distance", "noise"}: the main thread's ticks (Liftoff's as its
rows' weights, and its rows), their distance, and the distance sampling alone gives.
Exit status 0; 2 when perf is unavailable or recorded nothing.
"""
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

KERNEL = 0x8000_0000_0000


def demangle(names):
    """Short names for Swift symbols, through `swift-demangle --simplified` (as Liftoff's are made)."""
    tool = shutil.which("swift-demangle")
    swift = sorted({n.removesuffix("@plt") for n in names if n.startswith(("$s", "_$s"))})
    if not tool or not swift:
        return {}
    out = subprocess.run([tool, "--simplified"], input="\n".join(swift) + "\n", capture_output=True,
                         text=True).stdout.splitlines()
    return dict(zip(swift, out))


def key(name):
    """One spelling for both tools: no PLT or vDSO prefix, no `static`, nothing from the parameters on."""
    name = name.removesuffix("@plt")
    name = name.removeprefix("__vdso_").removeprefix("static ")
    return name.split("(")[0].strip()


def perf_leaves(data, window):
    """{tid: Counter(leaf symbol)} of the user-space leaf of each perf sample taken in `window`
    (CLOCK_MONOTONIC nanoseconds: the process keeps running after Liftoff stops recording, to
    write its reports, and perf sees that too)."""
    script = subprocess.run(["perf", "script", "-F", "tid,time,ip,sym", "--ns", "-i", data], capture_output=True,
                            text=True).stdout
    leaves = collections.defaultdict(collections.Counter)
    tid, found = None, True
    for line in script.splitlines():
        if not line.strip():
            continue
        if not line.startswith("\t"):  # a sample's header: its tid (padded with spaces) and time
            fields = line.split()
            seconds, _, fraction = fields[1].rstrip(":").partition(".")
            time = int(seconds) * 1_000_000_000 + int(fraction.ljust(9, "0")[:9])
            tid, found = int(fields[0]), not (window[0] <= time <= window[1])
            continue
        if found:
            continue
        parts = line.split(None, 1)
        try:
            ip = int(parts[0], 16)
        except ValueError:
            continue
        if ip >= KERNEL:
            continue
        symbol = parts[1].strip() if len(parts) > 1 else "[unknown]"
        symbol = symbol.rsplit("+0x", 1)[0]
        leaves[tid][symbol] += 1
        found = True
    return leaves


def liftoff_leaves(profile):
    """{tid: (Counter(leaf function), [row weights])} of Liftoff's running samples, each counted by
    the ticks it stands for: a late sampler's answer covers the ticks it missed while the thread ran
    (as much CPU time as perf's samples of it), so it weighs that many. perf names the function whose
    symbol holds the address, so functions inlined into it are looked through to it."""
    leaves = collections.defaultdict(collections.Counter)
    weights = collections.defaultdict(list)
    samples, stacks, frames = profile["samples"], profile["stacks"], profile["frames"]
    row_weights = samples.get("weight") or [1] * len(samples["stack"])
    for thread, stack, state, weight in zip(samples["thread"], samples["stack"], samples["state"], row_weights):
        if state == 0:
            while frames[stacks["frame"][stack]].get("inlined") and stacks["parent"][stack] >= 0:
                stack = stacks["parent"][stack]
            frame = frames[stacks["frame"][stack]]
            # Swift frames by their short name (perf's are simplified the same way); C++ frames,
            # whose short names Liftoff shortens itself, by the full name perf demangles too.
            name = frame["name"] if "::" in frame["name"] else (frame.get("short") or frame["name"])
            leaves[thread][key(name)] += weight
            weights[thread].append(weight)
    return {thread: (leaves[thread], weights[thread]) for thread in leaves}


def noise(a, b, a_weights, rounds=300, seed=1):
    """The mean distance between two samples drawn from one distribution (both tools' samples
    pooled), each the shape the tools took: perf's as single ticks, Liftoff's as its rows, each row
    one draw standing for its ticks. What sampling alone gives, the floor under any real
    disagreement; rows of many ticks (a sampler that fell behind on a busy machine) raise it."""
    import random
    rng = random.Random(seed)
    pooled = a + b
    names, weights = list(pooled), list(pooled.values())
    total_b = sum(b.values())

    def draw_a():
        drawn = collections.Counter()
        for name, weight in zip(rng.choices(names, weights, k=len(a_weights)), a_weights):
            drawn[name] += weight
        return drawn
    return sum(distance(draw_a(), collections.Counter(rng.choices(names, weights, k=total_b)))
               for _ in range(rounds)) / rounds


def distance(a, b):
    total_a, total_b = sum(a.values()), sum(b.values())
    return 0.5 * sum(abs(a[k] / total_a - b[k] / total_b) for k in set(a) | set(b))


def record(binary, extra):
    """One launch under perf: the main thread's leaf counts from Liftoff and from perf, or None."""
    with tempfile.TemporaryDirectory() as folder:
        data = os.path.join(folder, "perf.data")
        command = ["perf", "record", "-e", "cpu-clock", "-F", "999", "-g", "-k", "CLOCK_MONOTONIC", "-o", data, "--",
                   binary, "demo", "--quiet", "--linger", "0", "--plan", "naive", "--rate", "999",
                   "--out", os.path.join(folder, "out")] + extra
        # The demo's own settings only: a launcher's LIFTOFF_* variables would redirect its profile.
        environment = {name: value for name, value in os.environ.items() if not name.startswith("LIFTOFF_")}
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=environment)
        profile_path = os.path.join(folder, "out", "profile.json")
        if not os.path.exists(data) or not os.path.exists(profile_path):
            return None
        with open(profile_path) as handle:
            profile = json.load(handle)
        main_thread = next((thread["id"] for thread in profile["threads"] if thread.get("isMain")), None)
        origin, phases = profile["timeOriginNs"], profile["phases"]
        theirs = perf_leaves(data, (origin + phases["mainEntryNs"], origin + phases["endNs"]))
        ours, ours_weights = liftoff_leaves(profile).get(main_thread, (collections.Counter(), []))
    names = demangle(list(theirs.get(main_thread, {})))
    perf = collections.Counter()
    for name, count in theirs.get(main_thread, {}).items():
        perf[key(names.get(name.removesuffix("@plt"), name))] += count
    return ours, ours_weights, perf


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    binary, out_path, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    launches = int(os.environ.get("LAUNCHES", "3"))
    if not shutil.which("perf"):
        print("perf_agreement: perf is not installed.", file=sys.stderr)
        return 2
    rows = []
    pooled_ours, pooled_weights, pooled_perf = collections.Counter(), [], collections.Counter()
    for _ in range(max(launches, 1)):
        result = record(binary, extra)
        if result is None or not result[0] or not result[2]:
            print("perf_agreement: perf or the demo recorded nothing.", file=sys.stderr)
            return 2
        ours, weights, perf = result
        pooled_ours += ours
        pooled_weights += weights
        pooled_perf += perf
        rows.append((sum(ours.values()), len(weights), sum(perf.values()), distance(ours, perf), noise(ours, perf, weights)))
    pooled = (sum(pooled_ours.values()), len(pooled_weights), sum(pooled_perf.values()), distance(pooled_ours, pooled_perf),
              noise(pooled_ours, pooled_perf, pooled_weights))
    if out_path.endswith(".json"):
        fields = ("liftoff", "liftoffRows", "perf", "distance", "noise")
        with open(out_path, "w") as handle:
            json.dump({"launches": [dict(zip(fields, row)) for row in rows], "pooled": dict(zip(fields, pooled))}, handle)
        return 0
    lines = ["# Liftoff's sampler beside perf", "",
             f"{len(rows)} launches of `liftoff demo --plan naive` (everything on the main thread; "
             + " ".join(extra or ["no extra arguments"]) + "), each recorded by `perf record -e cpu-clock -F 999 -k "
             "CLOCK_MONOTONIC` while Liftoff samples it at 999 Hz. perf's samples count from `main` to the end of "
             "Liftoff's recording (after it, the process writes its reports). On the main thread, the distributions of "
             "the leaf function (perf's user-space leaf; Liftoff's running samples, each weighing the ticks it stands for; both spelled as short names without "
             "parameters; functions inlined into the leaf are looked through, as perf's symbols do) are compared by "
             "total-variation distance (0 identical, 1 disjoint). Sampling noise is the mean distance between two samples "
             "of the same shapes drawn from one distribution (the two tools' samples pooled; Liftoff's as its rows, each one "
             "draw weighing its ticks): the floor under any real disagreement. Written by `scripts/perf_agreement.py`.", "",
             "| launch | Liftoff running ticks (rows) | perf samples | distance | sampling noise |", "|---|---:|---:|---:|---:|"]
    for index, (a, r, b, d, n) in enumerate(rows, 1):
        lines.append(f"| {index} | {a} ({r}) | {b} | {d:.3f} | {n:.3f} |")
    a, r, b, d, n = pooled
    lines.append(f"| all {len(rows)} pooled | {a} ({r}) | {b} | **{d:.3f}** | {n:.3f} |")
    lines.append("")
    with open(out_path, "w") as handle:
        handle.write("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
