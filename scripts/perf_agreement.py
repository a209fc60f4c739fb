#!/usr/bin/env python3
"""Records one `liftoff demo` launch under `perf record -e cpu-clock -g` while Liftoff samples it
too, and compares the two on-CPU leaf-function distributions of each busy thread (total-variation
distance: half the sum of the absolute differences of the shares; 0 is identical, 1 disjoint).

usage: perf_agreement.py LIFTOFF_BINARY OUT.md [DEMO ARGS...]
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


def perf_leaves(data):
    """{tid: Counter(leaf symbol)} of the user-space leaf of each perf sample."""
    script = subprocess.run(["perf", "script", "-F", "tid,ip,sym", "-i", data], capture_output=True, text=True).stdout
    leaves = collections.defaultdict(collections.Counter)
    tid, found = None, True
    for line in script.splitlines():
        if not line.strip():
            continue
        if not line.startswith("\t"):  # a sample's header: its tid (padded with spaces)
            tid, found = int(line.split()[0]), False
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
    leaves = collections.defaultdict(collections.Counter)
    samples = profile["samples"]
    for thread, stack, state in zip(samples["thread"], samples["stack"], samples["state"]):
        if state == 0:
            frame = profile["frames"][profile["stacks"]["frame"][stack]]
            leaves[thread][key(frame.get("short") or frame["name"])] += 1
    return leaves


def distance(a, b):
    total_a, total_b = sum(a.values()), sum(b.values())
    return 0.5 * sum(abs(a[k] / total_a - b[k] / total_b) for k in set(a) | set(b))


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    binary, out_path, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    if not shutil.which("perf"):
        print("perf_agreement: perf is not installed.", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        data = os.path.join(folder, "perf.data")
        command = ["perf", "record", "-e", "cpu-clock", "-F", "999", "-g", "-o", data, "--", binary, "demo", "--quiet",
                   "--linger", "0", "--plan", "optimized", "--rate", "999", "--out", os.path.join(folder, "out")] + extra
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        profile_path = os.path.join(folder, "out", "profile.json")
        if not os.path.exists(data) or not os.path.exists(profile_path):
            print("perf_agreement: perf or the demo recorded nothing.", file=sys.stderr)
            return 2
        ours = liftoff_leaves(json.load(open(profile_path)))
        theirs = perf_leaves(data)
    names = demangle([n for counter in theirs.values() for n in counter])
    theirs = {tid: collections.Counter() + sum((collections.Counter({key(names.get(k.removesuffix("@plt"), k)): v})
                                                for k, v in c.items()), collections.Counter())
              for tid, c in theirs.items()}
    rows = []
    for tid in sorted(ours, key=lambda t: -sum(ours[t].values())):
        if tid in theirs and sum(ours[tid].values()) >= 50 and sum(theirs[tid].values()) >= 50:
            rows.append((tid, sum(ours[tid].values()), sum(theirs[tid].values()), distance(ours[tid], theirs[tid])))
    lines = ["# Liftoff's sampler beside perf", "",
             "One `liftoff demo` launch (" + " ".join(extra or ["no extra arguments"]) + ") recorded by `perf record -e "
             "cpu-clock -F 999` while Liftoff samples it at 999 Hz. For each thread with 50 or more on-CPU samples in both, "
             "the distributions of the leaf function (perf's user-space leaf; Liftoff's running samples; both spelled as short "
             "names without parameters) are compared by "
             "total-variation distance (0 identical, 1 disjoint). Written by `scripts/perf_agreement.py`.", "",
             "| thread | Liftoff running samples | perf samples | distance |", "|---|---:|---:|---:|"]
    for tid, a, b, d in rows:
        lines.append(f"| {tid} | {a} | {b} | {d:.3f} |")
    lines.append("")
    with open(out_path, "w") as handle:
        handle.write("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
