#!/usr/bin/env python3
"""Turns package-benchmark's raw samples (--format histogramSamples) into Reports/benchmarks/*.md.

Every claim is a ratio to a baseline measured in the same run, with the spread that tells
whether a difference is above the noise.

usage: report.py RAW_DIR OUT_DIR | --spread OUT_DIR RAW_DIR... | --only sampler|agent|scheduler|history|counts|cache|reports RAW_DIR OUT_DIR
"""
import glob
import os
import statistics
import sys
import datetime
import platform
import random


def load(raw_dir):
    """{(benchmark, metric): [values]} from the .tsv files of one run."""
    results = {}
    for path in glob.glob(os.path.join(raw_dir, "*.histogram.samples.tsv")):
        name = os.path.basename(path)[: -len(".histogram.samples.tsv")]
        # <baseline>.<target>.<benchmark>.<metric>
        _, _, rest = name.partition(".")
        _, _, rest = rest.partition(".")
        benchmark, _, metric = rest.rpartition(".")
        values = []
        with open(path) as handle:
            header = handle.readline()
            for line in handle:
                line = line.strip()
                if line:
                    values.append(float(line.split("\t")[-1]))
        scale = 1.0
        # Time units convert to nanoseconds; count units (K, M, G) to plain counts.
        for unit, factor in (("(ns)", 1.0), ("(us)", 1e3), ("(μs)", 1e3), ("(µs)", 1e3), ("(ms)", 1e6), ("(s)", 1e9),
                             ("(#)", 1.0), ("(K)", 1e3), ("(M)", 1e6), ("(G)", 1e9)):
            if header.strip().endswith(unit):
                scale = factor
        if values:
            results[(benchmark.replace("_", " "), metric)] = (header.strip(), [v * scale for v in values])
    return results


def quartiles(values):
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return q[0], statistics.median(values), q[2]


def median_interval(values, resamples=2000, seed=1):
    """95 % bootstrap confidence interval of the median."""
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(resamples))
    return medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]


def verdict(median, high, target):
    """'meets' when the interval's top is within the target, 'meets at the median', or 'misses'."""
    return "meets" if high <= target else ("meets at the median" if median <= target else "misses")


def getter(results):
    """A lookup of one benchmark's samples that says which results are missing."""
    def get(benchmark, metric="wallClock"):
        entry = results.get((benchmark, metric))
        if entry is None:
            raise SystemExit(f"report.py: no results for '{benchmark}' ({metric}); run the benchmarks first.")
        return entry[1]
    return get


SAMPLER_TARGETS = {
    # name: (label, target ratio)
    "paired unsampled vs unsampled": ("unsampled vs unsampled", None),
    "paired 100 Hz vs unsampled": ("100 Hz vs unsampled", None),
    "paired 1 kHz vs unsampled": ("1 kHz vs unsampled", 1.01),
    "paired 10 kHz vs unsampled": ("10 kHz vs unsampled", 1.03),
    "paired bare signals 1 kHz vs none": ("bare signals, empty handler, 1 kHz vs none", None),
    "paired bare signals 10 kHz vs none": ("bare signals, empty handler, 10 kHz vs none", None),
    "paired disk-wait check on vs off, 10 kHz": ("10 kHz, disk-wait check on vs off (a thread that answers in time)", None),
}
DISK_CHECK = "paired disk-wait check on vs off, 10 kHz"
FLOORS = {"paired 1 kHz vs unsampled": "paired bare signals 1 kHz vs none",
          "paired 10 kHz vs unsampled": "paired bare signals 10 kHz vs none"}
TTFF = "interleaved: observer, demo main entry to first frame, Liftoff and perf vs 1 Hz"
# The observer benchmark's variants: metric, label, goal (None: no goal).
OBSERVER_ROWS = [
    ("noise1HzPPM", "Liftoff, 1 Hz again: the method's noise", None),
    ("liftoff1kPPM", "Liftoff, 1 kHz", 1.03),
    ("perf1kPPM", "`perf record -g`, 1 kHz", None),
    ("liftoff10kPPM", "Liftoff, 10 kHz", 1.10),
    ("perf10kPPM", "`perf record -g`, 10 kHz", None),
]
IDLE = "paired 100 idle threads sampled vs not, 1 kHz"


def sampler_figures(results):
    """The sampler's headline figures of one run: {name: (median, low, high)}; idle cost in % of a core."""
    get = getter(results)
    figures = {}
    for name in SAMPLER_TARGETS:
        if (name, "ratioPPM") not in results:
            continue  # a run from before the benchmark existed
        ratios = [r / 1e6 for r in get(name, "ratioPPM")]
        figures[name] = (statistics.median(ratios),) + median_interval(ratios)
    idle = [(v - 1e5) / 1e4 for v in get(IDLE, "idleCostPPM")]
    figures[IDLE] = (statistics.median(idle),) + median_interval(idle)
    if (TTFF, "liftoff1kPPM") in results:
        for key, metric in (("ttff 1 kHz", "liftoff1kPPM"), ("ttff 10 kHz", "liftoff10kPPM")):
            ratios = [r / 1e6 for r in get(TTFF, metric)]
            figures[key] = (statistics.median(ratios),) + median_interval(ratios)
    return figures


def sampler_report(results, made_by="`make bench` (package-benchmark; raw samples in `Reports/benchmarks/raw/`)"):
    get = getter(results)
    figures = sampler_figures(results)

    lines = ["# Sampler overhead", ""]
    lines.append(f"Measured {datetime.date.today().isoformat()} on {platform.node()} "
                 f"({os.cpu_count()} CPUs, {platform.system()} {platform.release()}), release build, "
                 f"by {made_by}.")
    lines.append("")
    lines.append("## A running thread")
    lines.append("")
    lines.append("A fixed CPU workload (about 10 ms) runs in pairs on one thread: once unsampled, and once with the "
                 "sampler started for it on every thread of the process (its own thread competing for the two "
                 "cores included), alternating which goes first, up to 400 pairs per rate. Each pair gives a ratio, "
                 "so drift on the shared machine cancels. The table shows the quartiles of the ratios and a 95 % "
                 "bootstrap interval of their median; the unsampled-against-unsampled pairs show the method's own noise.")
    lines.append("")
    lines.append("| pairs | n | unsampled median (µs) | sampled median (µs) | ratio p25 | ratio median | 95 % interval | ratio p75 | target |")
    lines.append("|---|---:|---:|---:|---:|---:|---|---:|---|")
    for name, (label, target) in SAMPLER_TARGETS.items():
        if name not in figures:
            continue
        ratios = [r / 1e6 for r in get(name, "ratioPPM")]
        r25, r50, r75 = quartiles(ratios)
        _, low, high = figures[name]
        base = statistics.median(get(name, "unsampledNs")) / 1e3
        sampled = statistics.median(get(name, "sampledNs")) / 1e3
        shown = f"≤ {target:.2f}" if target else ("noise" if "unsampled vs" in label else ("floor" if "bare" in label else (
            "nothing measurable" if name == DISK_CHECK else "")))
        lines.append(f"| {label} | {len(ratios)} | {base:.0f} | {sampled:.0f} | {r25:.4f} | {r50:.4f} | "
                     f"{low:.4f} – {high:.4f} | {r75:.4f} | {shown} |")

    # These two run 1,000 iterations per measurement (scalingFactor .kilo).
    sample_ns = statistics.median(get("one sample (signal, unwind, ring)", "wallClock")) / 1000
    capture_ns = statistics.median(get("capture current stack (no signal)", "wallClock")) / 1000
    lines.append("")
    lines.append("| cost | median |")
    lines.append("|---|---:|")
    lines.append(f"| one sample: signal delivery, handler, unwind, ring write | {sample_ns / 1000:.2f} µs |")
    own = "one sample in an async function, 10 awaiting callers"
    if (own, "wallClock") in results:
        async_ns = statistics.median(get(own, "wallClock")) / 1000
        lines.append(f"| one sample in an async function with 10 awaiting callers (async chain read) | {async_ns / 1000:.2f} µs |")
    child = "one sample in an async let child, 10 awaiting callers in its parent"
    if (child, "childSampleNs") in results:
        child_ns = statistics.median(get(child, "childSampleNs"))
        lines.append(f"| one sample in an `async let` child, on into its suspended parent's 10 callers "
                     f"(process_vm_readv once, then kept) | {child_ns / 1000:.2f} µs |")
    lines.append(f"| capture the current stack without a signal | {capture_ns / 1000:.2f} µs |")
    clock_ns = statistics.median(get("did it run: read a thread's CPU clock", "wallClock")) / 1000
    switches_ns = statistics.median(get("did it run: read a thread's switches in", "wallClock")) / 1000
    lines.append(f"| did it run: read a thread's CPU clock (each tick per busy thread, every 100 ms per idle one) | "
                 f"{clock_ns / 1000:.2f} µs |")
    lines.append(f"| did it run: read a thread's switches in from schedstat (once per wait) | {switches_ns / 1000:.2f} µs |")
    lines.append("")
    lines.append(f"Telling whether a waiting thread ran cannot miss a wake-up: the sample that finds it blocked also "
                 f"reads its context switches (one `getrusage` in the handler), the next check reads its switches "
                 f"in from schedstat, and after that any advance of its CPU clock means it ran. Per thread per tick "
                 f"that costs one CPU-clock read ({clock_ns / 1000:.2f} µs) while it is busy or newly waiting, a "
                 f"schedstat read ({switches_ns / 1000:.2f} µs) once per wait, and for a thread idle for 8 checks a "
                 f"CPU-clock read every 100 ms ({clock_ns / 100e6 * 100:.5f} % of a core per idle thread).")
    lines.append("")
    lines.append(f"From the per-sample cost alone (a thread signalling itself), 1 kHz takes "
                 f"{sample_ns * 1000 / 1e9 * 100:.2f} % of a sampled thread's time and 10 kHz "
                 f"{sample_ns * 10000 / 1e9 * 100:.2f} %. A signal from another thread costs its target more on "
                 "this virtual machine (the interprocessor interrupt that delivers it exits to the hypervisor): the "
                 "bare-signal rows send SIGUSR2 with an empty handler at the same rates, the floor under any "
                 "signal-based sampler here. What Liftoff adds on top of that floor:")
    lines.append("")
    lines.append("| rate | Liftoff | bare signals | Liftoff beyond the floor |")
    lines.append("|---|---:|---:|---:|")
    for name, floor in FLOORS.items():
        liftoff_ratio = figures[name][0]
        floor_ratio = figures[floor][0]
        lines.append(f"| {SAMPLER_TARGETS[name][0].split(' vs')[0]} | {(liftoff_ratio - 1) * 100:+.2f} % | "
                     f"{(floor_ratio - 1) * 100:+.2f} % | {(liftoff_ratio / floor_ratio - 1) * 100:+.2f} % |")
    lines.append("")
    lines.append("## Idle threads")
    lines.append("")
    idle, idle_low, idle_high = figures[IDLE]
    lines.append("Windows of 1 s alternate, every thread sampled at 1 kHz in each: with 100 more threads blocked on "
                 "a semaphore, and without them. The CPU time of the sampler thread and of those threads in each "
                 "window (after 300 ms in which the sampler takes each new thread's stack once), as a share of one "
                 "core, is compared pair by pair; the benchmark harness's own threads are left out, their noise "
                 "would drown the difference. "
                 "A thread that did not run since a sample found it blocked is recorded as still blocked without a "
                 "signal; once idle for 8 checks, its clock is read every 100 ms, and in between only when the "
                 "process's CPU clock shows that some idle thread ran. That clock walks every thread, so it is read "
                 "every 1 + idle / 32 ticks (every 4 ms here).")
    lines.append("")
    lines.append("| pairs | n | extra CPU, median | 95 % interval | target |")
    lines.append("|---|---:|---:|---|---|")
    lines.append(f"| 100 idle threads sampled vs not | {len(get(IDLE, 'idleCostPPM'))} | {idle:.3f} % of a core | "
                 f"{idle_low:.3f} – {idle_high:.3f} % | ≤ 0.5 % |")
    lines.append("")
    lines.append("## A launch")
    lines.append("")
    lines.append("What sampling adds to a launch (the demo's main entry to first frame at 1 kHz and 10 kHz, beside "
                 "`perf record -g` at the same rates, worst of three runs), and what one unwind costs, cold and warm: "
                 "see [observer.md](observer.md).")
    lines.append("")
    verdicts = []
    for name, (label, target) in SAMPLER_TARGETS.items():
        if target:
            median, low, high = figures[name]
            floor = figures[FLOORS[name]][0]
            verdicts.append(f"{label.split(' vs')[0]} on a running thread {verdict(median, high, target)} its "
                            f"{(target - 1) * 100:.0f} % target ({(median - 1) * 100:+.2f} %, interval "
                            f"{(low - 1) * 100:+.2f} % to {(high - 1) * 100:+.2f} %; bare signals alone cost "
                            f"{(floor - 1) * 100:+.2f} %)")
    verdicts.append(f"100 idle threads {verdict(idle, idle_high, 0.5)} the 0.5 % target ({idle:.3f} % of a core)")
    if DISK_CHECK in figures:
        # Nothing measurable: the interval of the median ratio holds 1, or lies within the method's noise.
        median, low, high = figures[DISK_CHECK]
        noise = figures["paired unsampled vs unsampled"]
        spread = max(abs(noise[1] - 1), abs(noise[2] - 1))
        nothing = low <= 1 <= high or (abs(low - 1) <= spread and abs(high - 1) <= spread)
        verdicts.append(f"the disk-wait check on a thread that answers in time costs "
                        f"{'nothing measurable' if nothing else 'something measurable'} "
                        f"({(median - 1) * 100:+.2f} %, interval {(low - 1) * 100:+.2f} % to {(high - 1) * 100:+.2f} %)")
    lines.append("Verdict: " + "; ".join(verdicts) + ".")
    lines.append("")
    lines.append("## Symbolization")
    lines.append("")
    lines.append("Each frame gets its name from the ELF symbol tables (the object's and its separate debug file's) and its "
                 "source line and inlined callees from DWARF (libdw). Two address sets: 20,000 return addresses from "
                 "real samples of the benchmark process (repeats included, as in a profile), and 20,000 distinct "
                 "addresses spread evenly over the code of the release benchmark binary and of libc, half each "
                 "(every lookup a first one: the worst case).")
    lines.append("")
    lines.append("| run | median | addresses per second | target |")
    lines.append("|---|---:|---:|---|")
    cold = statistics.median(get("symbolize 20000 sampled addresses, cold", "wallClock"))
    warm = statistics.median(get("symbolize 20000 sampled addresses, cached", "wallClock"))
    distinct = statistics.median(get("symbolize 20000 distinct code addresses, cold", "wallClock"))
    lines.append(f"| sampled, cold: read symbol tables, debug files and DWARF, then resolve | {cold / 1e6:.1f} ms | "
                 f"{20000 / (cold / 1e9):,.0f} | ≤ 50 ms |")
    lines.append(f"| sampled, cached: every address resolved before | {warm / 1e6:.2f} ms | {20000 / (warm / 1e9):,.0f} | "
                 "≥ 5,000,000 / s |")
    lines.append(f"| distinct, cold | {distinct / 1e6:.1f} ms | {20000 / (distinct / 1e9):,.0f} | |")
    lined = get("symbolize 20000 distinct code addresses, cold", "framesWithLines")
    inlined = get("symbolize 20000 distinct code addresses, cold", "inlinedFrames")
    if lined and inlined:
        lines.append("")
        lines.append(f"The distinct addresses resolved to {int(statistics.median(lined)):,} frames with a source line and "
                     f"{int(statistics.median(inlined)):,} inlined frames. Opening libc's separate debug file is most of a "
                     "cold start: libdw decompresses its compressed DWARF sections when it opens the file (about 45 ms "
                     "here, once per process, and only when a sampled address lies in libc).")
    lines.append("")
    return "\n".join(lines)


def runtime_report(results):
    get = getter(results)

    # The round trips and the empty iteration run 1,000 iterations per measurement.
    raw = statistics.median(get("raw DispatchQueue.main.async round trip")) / 1000
    event = statistics.median(get("run loop event round trip")) / 1000
    empty = statistics.median(get("empty run loop iteration")) / 1000
    draw = statistics.median(get("draw pass over 1000 views"))
    lines = ["# Run loop costs", ""]
    lines.append(f"Measured {datetime.date.today().isoformat()} on {platform.node()} ({os.cpu_count()} CPUs), "
                 "release build, by `make bench`. Ratios are against a raw `DispatchQueue.main.async` round trip "
                 "(post a block, wait on a semaphore until it ran) measured in the same run.")
    lines.append("")
    lines.append("| measurement | median | ratio to the raw round trip |")
    lines.append("|---|---:|---:|")
    lines.append(f"| raw `DispatchQueue.main.async` round trip | {raw / 1000:.2f} µs | 1.00 |")
    lines.append(f"| run loop event round trip (post from another thread, loop wakes, runs it, signals back) | "
                 f"{event / 1000:.2f} µs | {event / raw:.2f} |")
    lines.append(f"| empty run loop iteration (no events, no timers, observers only) | {empty / 1000:.2f} µs | "
                 f"{empty / raw:.3f} |")
    lines.append(f"| draw pass over 1,000 views (mark all, run one iteration: draw and commit) | "
                 f"{draw / 1e6:.2f} ms | — |")
    lines.append("")
    lines.append(f"Per view, the draw pass costs {draw / 1000:.0f} ns (text measuring included).")
    lines.append("")
    return "\n".join(lines)


def scheduler_report(results):
    get = getter(results)

    default = "paired: scheduler vs raw dispatch, 100000 empty tasks"
    with_cpu = "paired: scheduler reading CPU clocks vs raw dispatch, 100000 empty tasks"
    # One million calls per measurement (scalingFactor .mega); a thousand violations (.kilo).
    foundation = statistics.median(get("Thread.isMainThread, 1000000 calls")) / 1e6
    cached = statistics.median(get("ThreadRules.isMainThread, 1000000 calls")) / 1e6
    violation = statistics.median(get("record a violation (capture, dedupe by call site)")) / 1e3
    lines = ["# Scheduler and thread-rule costs", ""]
    lines.append(f"Measured {datetime.date.today().isoformat()} on {platform.node()} ({os.cpu_count()} CPUs), "
                 "release build, by `make bench`; each ratio is against a baseline measured in the same run.")
    lines.append("")
    lines.append("100,000 empty tasks, through `LaunchScheduler` (each recorded: thread, queue and times; a recording "
                 "gives each task the CPU time of its running samples afterwards) and through raw "
                 "`DispatchQueue.global().async` with a `DispatchGroup`, run in pairs that alternate which goes first; "
                 "the ratio is taken per pair, so drift between runs cancels. `Options(measuresCPU: true)` also reads "
                 "the thread CPU clock around each task (two system calls).")
    lines.append("")
    lines.append("| pairs | n | raw median | scheduler median | ratio median | 95 % interval | target |")
    lines.append("|---|---:|---:|---:|---:|---|---|")
    summary = {}
    for name, label, target in [(default, "scheduler (default)", "≤ 1.25"),
                                (with_cpu, "scheduler with `Options(measuresCPU: true)`", "")]:
        ratios = [r / 1e6 for r in get(name, "ratioPPM")]
        low, high = median_interval(ratios)
        ratio = statistics.median(ratios)
        summary[name] = (ratio, low, high)
        raw_ns = statistics.median(get(name, "rawNs"))
        sched_ns = statistics.median(get(name, "scheduledNs"))
        lines.append(f"| {label} | {len(ratios)} | {raw_ns / 1e6:.1f} ms ({raw_ns / 100000:.0f} ns a task) | "
                     f"{sched_ns / 1e6:.1f} ms ({sched_ns / 100000:.0f} ns a task) | {ratio:.2f} | "
                     f"{low:.2f} – {high:.2f} | {target} |")
    lines.append("")
    fan_out = "paired: task group fan-out of 10000 child tasks, recorded vs not"
    if (fan_out, "ratioPPM") in results:
        ratios = [r / 1e6 for r in get(fan_out, "ratioPPM")]
        low, high = median_interval(ratios)
        ratio = statistics.median(ratios)
        plain_ns = statistics.median(get(fan_out, "rawNs"))
        recorded_ns = statistics.median(get(fan_out, "recordedNs"))
        verdict = "meets" if high <= 1.05 else ("meets at the median" if ratio <= 1.05 else "misses")
        lines.append("A task group fans out 10,000 child tasks that each return a number, with a launch recording "
                     "running (`LaunchRecorder`: the sampler at 1 kHz on every thread, each task's creation and each "
                     "job's enqueue and run recorded) and without, in pairs that alternate which goes first.")
        lines.append("")
        lines.append("| pairs | n | not recorded | recorded | ratio median | 95 % interval | target |")
        lines.append("|---|---:|---:|---:|---:|---|---|")
        lines.append(f"| task group fan-out, 10,000 child tasks | {len(ratios)} | {plain_ns / 1e6:.1f} ms "
                     f"({plain_ns / 10000:.0f} ns a task) | {recorded_ns / 1e6:.1f} ms ({recorded_ns / 10000:.0f} ns a task) | "
                     f"{ratio:.3f} | {low:.3f} – {high:.3f} | ≤ 1.05 |")
        lines.append("")
        lines.append(f"Verdict: recording a fan-out of Swift tasks {verdict} its 1.05× target: {ratio:.3f}× "
                     f"(95 % interval {low:.3f} – {high:.3f}).")
        lines.append("")
    blocking_rows = []
    calls = [(f"paired: blocking-call checks {place}, 100000 writes to the null device, checked vs bare", "a write", place)
             for place in ("on the UI thread", "off the UI thread", "off the UI thread, main queue on workers")]
    calls += [(f"paired: lock checks {place}, 100000 locks of a free mutex, checked vs bare", "a free mutex's lock", place)
              for place in ("on the UI thread", "off the UI thread")]
    for name, call, place in calls:
        if (name, "ratioPPM") not in results:
            continue
        ratios = [r / 1e6 for r in get(name, "ratioPPM")]
        plain = statistics.median(get(name, "rawNs")) / 100000
        r50 = statistics.median(ratios)
        r_low, r_high = median_interval(ratios)
        target = 50 if place.startswith("on") else 5
        blocking_rows.append((f"{call}, {place}", len(ratios), plain, r50, plain * (r50 - 1), plain * (r_low - 1), plain * (r_high - 1), target))
    if blocking_rows:
        lines.append("What the blocking-call rules add to a C library call while they are checked: 100,000 one-byte "
                     "writes to /dev/null (a device, which no rule reports) through Liftoff's `write` with the checks "
                     "armed, against the same writes through the C library's own `write` (the bare call), in pairs "
                     "that alternate which goes first: on the rules' UI thread (the call's descriptor is looked up), "
                     "off it, and off it in a program whose main queue worker threads drain (after `dispatch_main`, as "
                     "Swift's async `main` does: each call also asks libdispatch which queue it runs). The same for "
                     "100,000 locks and unlocks of a free mutex through Liftoff's `pthread_mutex_lock` (lock-wait-on-main: "
                     "on the UI thread the lock is tried first) against the C library's own.")
        lines.append("")
        lines.append("| call, where | pairs | bare | ratio median | added per call | 95 % interval | target |")
        lines.append("|---|---:|---:|---:|---:|---|---|")
        for place, pairs, plain, r50, added, low, high, target in blocking_rows:
            lines.append(f"| {place} | {pairs} | {plain:.0f} ns | {r50:.4f} | {added:+.1f} ns | {low:+.1f} – {high:+.1f} ns | "
                         f"≤ {target} ns |")
        lines.append("")
        for place, _, _, _, added, _, high, target in blocking_rows:
            outcome = "meets" if high <= target else ("meets at the median" if added <= target else "misses")
            lines.append(f"Verdict {place}: the check {outcome} its {target} ns target per call.")
        lines.append("")
    lines.append("| check | median | ratio | target |")
    lines.append("|---|---:|---:|---|")
    lines.append(f"| `Thread.isMainThread` | {foundation:.1f} ns | 1.00 | |")
    lines.append(f"| `ThreadRules.isMainThread` (cached thread id) | {cached:.2f} ns | {foundation / cached:.0f}× cheaper | ≥ 50× |")
    lines.append(f"| record a violation: capture the stack, find its call site, count the repeat | {violation / 1000:.2f} µs | | |")
    lines.append("")
    ratio, low, high = summary[default]
    measured = summary[with_cpu][0]
    verdict = "meets" if high <= 1.25 else ("meets at the median" if ratio <= 1.25 else "misses")
    lines.append(f"Verdict: the scheduler {verdict} its 1.25× target: {ratio:.2f}× raw dispatch (95 % interval "
                 f"{low:.2f} – {high:.2f}); reading CPU clocks around each task makes it {measured:.2f}×. The cached main-thread "
                 f"check is {foundation / cached:.0f}× cheaper than `Thread.isMainThread` (target ≥ 50×).")
    lines.append("")
    return "\n".join(lines)


def watch_report(results):
    get = getter(results)
    ratios = [r / 1e6 for r in get("paired: busy run loop with the hang watcher vs without, 4000 events", "ratioPPM")]
    ratio = statistics.median(ratios)
    low, high = median_interval(ratios)
    lines = ["# Hang watcher cost", ""]
    lines.append(f"Measured {datetime.date.today().isoformat()} on {platform.node()} ({os.cpu_count()} CPUs), "
                 "release build, by `make bench`. A run loop on its own thread handles a batch of 4,000 queued "
                 "events of about 10 µs of work each, with the hang watcher running (the loop records each iteration's start and "
                 "what it runs; the watcher thread polls every 25 ms) and without, in pairs that alternate which "
                 "goes first.")
    lines.append("")
    lines.append("| pairs | ratio median | 95 % interval | p25 | p75 | target |")
    lines.append("|---:|---:|---|---:|---:|---|")
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratio] * 3
    lines.append(f"| {len(ratios)} | {ratio:.4f} | {low:.4f} – {high:.4f} | {q[0]:.4f} | {q[2]:.4f} | ≤ 1.02 |")
    lines.append("")
    verdict = "meets" if high <= 1.02 else ("meets at the median" if ratio <= 1.02 else "misses")
    lines.append(f"Verdict: the hang watcher {verdict} its 1.02× target ({(ratio - 1) * 100:+.2f} %).")
    lines.append("")
    return "\n".join(lines)


def reports_report(results):
    get = getter(results)
    base = statistics.median(get("encode the profile as JSON (baseline)"))
    lines = ["# Rendering reports at scale", ""]
    lines.append(f"Measured {datetime.date.today().isoformat()} on {platform.node()} ({os.cpu_count()} CPUs), "
                 "release build, by `make bench-reports` (or `make bench`). The profile is `Profile.synthetic(samples: 1_000_000, "
                 "distinctStacks: 50_000, tasks: 10_000)`: four threads at 1 kHz, stacks that extend one another by "
                 "one to three frames, over 2,000 function names. The baseline is encoding the same profile as `profile.json` "
                 "(`Profile.jsonData()`, Foundation's JSONEncoder), measured in the same run.")
    lines.append("")
    lines.append("| format | median | p75 | samples per second | ratio to JSON encoding |")
    lines.append("|---|---:|---:|---:|---:|")
    lines.append(f"| encode profile.json (baseline) | {base / 1e6:.0f} ms | "
                 f"{quartiles(get('encode the profile as JSON (baseline)'))[2] / 1e6:.0f} ms | {1e6 / (base / 1e9) / 1e6:.2f} M | 1.00 |")
    # Every format the benchmarks rendered (they render ReportFormats.all), in name order.
    formats = sorted({benchmark[len("render "):] for benchmark, metric in results
                      if benchmark.startswith("render ") and metric == "wallClock"})
    for name in formats:
        values = get(f"render {name}")
        median = statistics.median(values)
        lines.append(f"| {name} | {median / 1e6:.0f} ms | {quartiles(values)[2] / 1e6:.0f} ms | "
                     f"{1e6 / (median / 1e9) / 1e6:.2f} M | {median / base:.2f} |")
    explain = [(benchmark, metric) for benchmark, metric in results if benchmark.startswith("explain ")]
    if explain:
        values = get(explain[0][0])
        median = statistics.median(values)
        lines.append(f"| explain (every insight rule) | {median / 1e6:.0f} ms | {quartiles(values)[2] / 1e6:.0f} ms | "
                     f"{1e6 / (median / 1e9) / 1e6:.2f} M | {median / base:.2f} |")
    path_verdict = None
    if ("path to ready and coverage", "wallClock") in results:
        values = get("path to ready and coverage")
        median = statistics.median(values)
        lines.append(f"| path to ready and coverage | {median / 1e6:.0f} ms | {quartiles(values)[2] / 1e6:.0f} ms | "
                     f"{1e6 / (median / 1e9) / 1e6:.2f} M | {median / base:.2f} |")
        low, high = median_interval(values)
        path_verdict = (f"The path to ready and the launch's coverage take {median / 1e6:.0f} ms "
                        f"(95 % interval {low / 1e6:.0f}–{high / 1e6:.0f} ms): {verdict(median, high, 100e6)} the 100 ms target.")
    lines.append("")
    html = statistics.median(get("output bytes", "htmlBytes"))
    speedscope = statistics.median(get("output bytes", "speedscopeBytes"))
    json_bytes = statistics.median(get("output bytes", "jsonBytes"))
    slowest = max(statistics.median(get(f"render {name}")) for name in formats)
    lines.append(f"Sizes: profile.json {json_bytes / 1e6:.0f} MB, the HTML report {html / 1e6:.1f} MB (target under 10 MB: "
                 f"flame-graph nodes under 1/100,000 of the samples and flame-chart bars under 1/20,000 of a thread's "
                 f"time are merged into their parents, at most 40,000 nodes per tree and 150,000 bars), speedscope "
                 f"{speedscope / 1e6:.0f} MB (its format repeats every sample's whole stack).")
    lines.append("")
    lines.append(f"Verdict: every format renders in {slowest / 1e9:.2f} s or less, against a target of about a second "
                 f"or two, and each is {'faster than' if slowest < base else 'within ' + format(slowest / base, '.1f') + '× of'} "
                 "encoding the profile itself.")
    if path_verdict:
        lines.append("")
        lines.append(path_verdict)
    lines.append("")
    return "\n".join(lines)


def compare_report(results):
    get = getter(results)
    decode = statistics.median(get("decode 2 x 100 profiles (baseline)"))
    compare = statistics.median(get("compare 2 x 100 profiles"))
    ratios = [r / 1e6 for r in get("paired: 10 recorded launches vs 10 bare", "ratioPPM")]
    r25, r50, r75 = quartiles(ratios)
    low, high = median_interval(ratios)
    bare = statistics.median(get("paired: 10 recorded launches vs 10 bare", "bareNs")) / 10
    recorded = statistics.median(get("paired: 10 recorded launches vs 10 bare", "recordedNs")) / 10
    lines = ["# Comparing runs and recording launches", ""]
    lines.append(f"Measured {datetime.date.today().isoformat()} on {platform.node()} ({os.cpu_count()} CPUs), "
                 "release build, by `make bench`.")
    lines.append("")
    lines.append("## Comparing two folders of 100 profiles each")
    lines.append("")
    lines.append("Each profile has 2,000 samples, 1,000 distinct stacks and 8 tasks. `compare` loads both folders, "
                 "compares time to first frame, the phases, every task's duration and CPU time (Mann–Whitney U and a "
                 "2,000-round bootstrap per metric), compares each of the 2,000 functions (a permutation test each, "
                 "Benjamini–Hochberg), finds each run's insights, builds the differential flame graph and renders the "
                 "Markdown and the SVG. The baseline only decodes the 200 profiles.")
    lines.append("")
    lines.append("| work | median | ratio to decoding |")
    lines.append("|---|---:|---:|")
    lines.append(f"| decode 2 × 100 profiles (baseline) | {decode / 1e6:.0f} ms | 1.00 |")
    lines.append(f"| compare 2 × 100 profiles | {compare / 1e6:.0f} ms | {compare / decode:.2f} |")
    lines.append("")
    if ("functions of 2 x 30 demo runs", "wallClock") in results:
        functions = statistics.median(get("functions of 2 x 30 demo runs"))
        demo_decode = statistics.median(get("decode 2 x 30 demo profiles (baseline)"))
        lines.append("## Naming the function: 2 × 30 demo launches")
        lines.append("")
        lines.append("The demo recorded 30 times a side, interleaved, head 10 % slower (`--slowdown 10%`). Every function's "
                     "CPU and waiting time per run is compared with a permutation test and Benjamini–Hochberg "
                     "(`FunctionComparison`); the baseline decodes the 60 profiles.")
        lines.append("")
        lines.append("| work | median | ratio to decoding |")
        lines.append("|---|---:|---:|")
        lines.append(f"| decode 2 × 30 demo profiles (baseline) | {demo_decode / 1e6:.0f} ms | 1.00 |")
        lines.append(f"| compare every function | {functions / 1e6:.0f} ms | {functions / demo_decode:.2f} |")
        lines.append("")
        lines.append(f"Verdict: {functions / 1e9:.2f} s against a target of 2 s: "
                     + ("met." if functions <= 2e9 else "missed."))
        lines.append("")
    lines.append(f"Decoding (Foundation's JSONDecoder, about {decode / 200 / 1e6:.0f} ms a profile) is most of the work; "
                 "each takes only a few iterations in 20 s, so on this shared machine the two medians move by "
                 "a second or more between runs" + (" and can even cross, as here." if compare < decode else "."))
    lines.append("")
    lines.append("## Recording overhead per launch")
    lines.append("")
    lines.append("A 10 ms launch (`/bin/sleep 0.01`) ten times bare (`posix_spawn` and `waitpid`) against ten "
                 "runs of `liftoff record` (spawn with `LIFTOFF_LAUNCH_NS`/`LIFTOFF_PROFILE_OUT`, the run's log "
                 "file, each finished run appended to the run journal, `record.json` written at the end), in pairs that "
                 "alternate which goes first.")
    lines.append("")
    lines.append("| pairs | bare per launch | recorded per launch | ratio p25 | ratio median | 95 % interval | ratio p75 | target |")
    lines.append("|---:|---:|---:|---:|---:|---|---:|---|")
    lines.append(f"| {len(ratios)} | {bare / 1e6:.2f} ms | {recorded / 1e6:.2f} ms | {r25:.4f} | {r50:.4f} | "
                 f"{low:.4f} – {high:.4f} | {r75:.4f} | ≤ 1.05 |")
    lines.append("")
    verdict = "meets" if high <= 1.05 else ("meets at the median" if r50 <= 1.05 else "misses")
    lines.append(f"Verdict: recording {verdict} its 1.05× target: it adds {(r50 - 1) * 100:+.2f} % per launch "
                 f"(95 % interval {(low - 1) * 100:+.2f} % to {(high - 1) * 100:+.2f} %), about "
                 f"{(recorded - bare) / 1e3:.0f} µs.")
    lines.append("")
    return "\n".join(lines)


def agent_report(results):
    true_name = "paired agent: 20 launches of true with the agent vs 20 bare"
    demo_name = "paired agent: demo time to first frame at 1 kHz, agent injected vs bare"
    lines = ["# The injected agent", ""]
    lines.append(f"Measured {datetime.date.today().isoformat()} on {platform.node()} ({os.cpu_count()} CPUs), "
                 "release build, by `make bench` or `make bench-agent`.")
    lines.append("")
    if (true_name, "ratioPPM") not in results:
        lines.append("No agent results: `make bench` builds `libLiftoffAgent.so` beside the release `liftoff`.")
        return "\n".join(lines) + "\n"
    get = getter(results)
    # The harness keeps each metric's samples sorted, so pairs survive only in the ratio: the
    # added time is the bare median times (ratio - 1).
    bare = [v / 20 for v in get(true_name, "bareNs")]
    agent = [v / 20 for v in get(true_name, "agentNs")]
    ratios = [r / 1e6 for r in get(true_name, "ratioPPM")]
    b50 = statistics.median(bare)
    r50 = statistics.median(ratios)
    r_low, r_high = median_interval(ratios)
    a50, low, high = b50 * (r50 - 1), b50 * (r_low - 1), b50 * (r_high - 1)
    lines.append("## Launch of /bin/true")
    lines.append("")
    lines.append("Twenty launches of `/bin/true` with `libLiftoffAgent.so` preloaded (sampling every thread at 1 kHz "
                 "from before `main`, writing its recording at exit) against twenty bare, in pairs that alternate which "
                 "goes first; `posix_spawn` and `waitpid`, output to /dev/null.")
    lines.append("")
    lines.append("| pairs | bare per launch | with the agent | ratio median | added, median | 95 % interval | target |")
    lines.append("|---:|---:|---:|---:|---:|---|---|")
    lines.append(f"| {len(ratios)} | {b50 / 1e6:.2f} ms | {statistics.median(agent) / 1e6:.2f} ms | {r50:.3f} | "
                 f"{a50 / 1e6:+.2f} ms | {low / 1e6:+.2f} – {high / 1e6:+.2f} ms | ≤ +2 ms |")
    lines.append("")
    lines.append(f"Verdict: the agent {verdict(a50, high, 2e6)} its +2 ms target per launch.")
    lines.append("")
    if (demo_name, "ratioPPM") in results:
        ratios = [r / 1e6 for r in get(demo_name, "ratioPPM")]
        r25, r50, r75 = quartiles(ratios)
        low, high = median_interval(ratios)
        lines.append("## The demo's time to first frame at 1 kHz")
        lines.append("")
        lines.append("`liftoff demo` (which links Liftoff and samples itself at 1 kHz) with the agent preloaded against "
                     "bare, in alternating pairs. The demo's sampler tells the agent to stand down before it starts.")
        lines.append("")
        lines.append("| pairs | ratio p25 | ratio median | 95 % interval | ratio p75 | target |")
        lines.append("|---:|---:|---:|---|---:|---|")
        lines.append(f"| {len(ratios)} | {r25:.4f} | {r50:.4f} | {low:.4f} – {high:.4f} | {r75:.4f} | ≤ 1.03 |")
        lines.append("")
        lines.append(f"Verdict: {verdict(r50, high, 1.03)} the 1.03× target.")
        lines.append("")
    lines.extend(audit_section(results))
    lines.extend(tree_section(results))
    return "\n".join(lines)


TREES = [("true", "`/bin/true`", None),
         ("a 40-process shell tree", "40 short programs from a shell script", 1.15),
         ("a shim in front of python3 -c pass", "a version-manager shim, then `python3 -c pass`", None),
         ("a no-op swift build", "`swift build` with nothing to build", None)]
TREE_VARIANTS = [("liftoffPPM", "Liftoff"), ("noChildrenPPM", "Liftoff --no-children"), ("perfPPM", "`perf record -g`")]


def tree_section(results):
    """Process trees timed from inside, bare and under each profiler, in rotating order."""
    get = getter(results)
    rows = []
    for name, label, target in TREES:
        benchmark = f"interleaved: process tree, {name}: bare, Liftoff, Liftoff --no-children, perf"
        if (benchmark, "bareUs") not in results:
            continue
        bare = get(benchmark, "bareUs")
        cells = []
        for metric, _ in TREE_VARIANTS:
            ratios = [r / 1e6 for r in results[(benchmark, metric)][1]] if (benchmark, metric) in results else []
            cells.append(ratios)
        rows.append((label, target, len(bare), statistics.median(bare), cells))
    if not rows:
        return []
    lines = ["## Process trees", ""]
    lines.append("Launches that are trees of processes, each timed from inside by the bash script that starts them "
                 "(`EPOCHREALTIME`, no process of its own): bare, under `liftoff profile` (children followed, the "
                 "default), under `liftoff profile --no-children`, and under `perf record -e cpu-clock -F 1000 -g` "
                 "(which follows children too), in rounds of the four in rotating order. Each ratio is the round's "
                 "time under the profiler over its bare time; the median and its 95 % interval.")
    lines.append("")
    lines.append("| tree | rounds | bare, median | " + " | ".join(label for _, label in TREE_VARIANTS) + " | target (Liftoff) |")
    lines.append("|---|---:|---:|" + "---:|" * len(TREE_VARIANTS) + "---|")
    verdicts = []
    for label, target, rounds, bare, cells in rows:
        texts = []
        for ratios in cells:
            if not ratios:
                texts.append("n/a")
                continue
            low, high = median_interval(ratios)
            texts.append(f"{statistics.median(ratios):.3f} ({low:.3f} – {high:.3f})")
        target_text = f"≤ {target:.2f}×" if target else ""
        lines.append(f"| {label} | {rounds} | {bare / 1e3:.1f} ms | " + " | ".join(texts) + f" | {target_text} |")
        if target and cells[0]:
            low, high = median_interval(cells[0])
            verdicts.append(f"Verdict for {label}: Liftoff {verdict(statistics.median(cells[0]), high, target)} "
                            f"its {target:.2f}× target.")
    lines.append("")
    lines.extend(verdicts)
    lines.append("")
    return lines


def audit_section(results):
    """The loader's audit library: what it adds to a launch the agent already profiles."""
    get = getter(results)
    programs = [("true", "`/bin/true`"), ("liftoff --help", "`liftoff --help` (Swift, Foundation)")]
    rows = []
    for name, label in programs:
        benchmark = f"paired audit: 20 launches of {name} with the agent and audit library vs the agent alone"
        if (benchmark, "ratioPPM") not in results:
            continue
        alone = [v / 20 for v in get(benchmark, "bareNs")]
        ratios = [r / 1e6 for r in get(benchmark, "ratioPPM")]
        if not alone or not ratios:
            continue
        b50 = statistics.median(alone)
        r50 = statistics.median(ratios)
        r_low, r_high = median_interval(ratios)
        added, low, high = b50 * (r50 - 1), b50 * (r_low - 1), b50 * (r_high - 1)
        rows.append((label, len(ratios), b50, r50, added, low, high))
    if not rows:
        return []
    lines = ["## The loader's audit library", ""]
    lines.append("Twenty launches with `libLiftoffAgent.so` preloaded and `libLiftoffAudit.so` set in `LD_AUDIT` (as "
                 "`liftoff profile` runs a program: the loader's timeline, each object's initializers timed) against "
                 "twenty with the agent alone, in pairs that alternate which goes first.")
    lines.append("")
    lines.append("| program | pairs | agent alone per launch | ratio median | added, median | 95 % interval | target |")
    lines.append("|---|---:|---:|---:|---:|---|---|")
    for label, pairs, b50, r50, added, low, high in rows:
        lines.append(f"| {label} | {pairs} | {b50 / 1e6:.2f} ms | {r50:.3f} | {added / 1e6:+.3f} ms | "
                     f"{low / 1e6:+.3f} – {high / 1e6:+.3f} ms | ≤ +0.2 ms |")
    lines.append("")
    for label, _, _, _, added, _, high in rows:
        lines.append(f"Verdict for {label}: the audit library {verdict(added, high, 0.2e6)} its +0.2 ms target per launch.")
    lines.append("")
    return lines


def perf_agreement_section(out_dir):
    """The table of `perf-agreement.md` (written by `make perf-agreement`, which `make bench` runs first)."""
    path = os.path.join(out_dir, "perf-agreement.md")
    if not os.path.exists(path):
        return ""
    with open(path) as handle:
        text = handle.read()
    # Its first line is its own title; the rest becomes a section of sampler.md.
    body = text.split("\n", 1)[1] if "\n" in text else ""
    return "\n## Agreement with perf\n" + body.rstrip() + "\n\nAim: a distance of 0.10 or less on the main thread. " \
        "The test `Agreement with perf` checks the same on every `make test` where perf works.\n"


def write(out_dir, name, text):
    target = os.path.join(out_dir, name)
    with open(target + ".tmp", "w") as handle:
        handle.write(text)
    os.replace(target + ".tmp", target)
    print(text)


def spread_report(raw_dirs):
    """Each headline target in every run, and the worst run against the target."""
    runs = []
    for raw_dir in raw_dirs:
        results = load(raw_dir)
        if not results:
            raise SystemExit(f"report.py: no benchmark results in {raw_dir}.")
        figures = sampler_figures(results)
        ratios = [r / 1e6 for r in getter(results)("paired: scheduler vs raw dispatch, 100000 empty tasks", "ratioPPM")]
        figures["scheduler"] = (statistics.median(ratios),) + median_interval(ratios)
        runs.append(figures)
    rows = [
        ("paired 1 kHz vs unsampled", "running thread at 1 kHz (ratio)", 1.01, "{:.4f}"),
        ("paired 10 kHz vs unsampled", "running thread at 10 kHz (ratio)", 1.03, "{:.4f}"),
        (IDLE, "100 idle threads at 1 kHz (% of a core)", 0.5, "{:.3f}"),
        ("ttff 1 kHz", "demo main entry to first frame at 1 kHz vs 1 Hz (ratio)", 1.03, "{:.4f}"),
        ("ttff 10 kHz", "demo main entry to first frame at 10 kHz vs 1 Hz (ratio)", 1.10, "{:.4f}"),
        ("scheduler", "scheduler vs raw dispatch (ratio)", 1.25, "{:.3f}"),
    ]
    lines = ["# Spread over repeated benchmark runs", ""]
    lines.append(f"Measured {datetime.date.today().isoformat()} on {platform.node()} ({os.cpu_count()} CPUs), release "
                 f"build, by `make bench-spread`: the sampler, scheduler and launch benchmarks run {len(runs)} times "
                 "in a row. Each cell is that run's median (95 % interval of the median); the verdict takes the "
                 "worst run.")
    lines.append("")
    lines.append("| target | " + " | ".join(f"run {i + 1}" for i in range(len(runs))) + " | worst | goal | verdict |")
    lines.append("|---|" + "---:|" * len(runs) + "---:|---|---|")
    for key, label, target, form in rows:
        cells = []
        worst = None
        for figures in runs:
            if key not in figures:
                cells.append("—")
                continue
            median, low, high = figures[key]
            cells.append(f"{form.format(median)} ({form.format(low)} – {form.format(high)})")
            worst = figures[key] if worst is None or median > worst[0] else worst
        if worst is None:
            continue
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {form.format(worst[0])} | ≤ {target} | "
                     f"{verdict(worst[0], worst[2], target)} |")
    lines.append("")
    return "\n".join(lines)


# name, label, and iterations per recorded value (the scaled benchmarks record 1,000 at a time).
UNWINDS = [
    ("one unwind, 30 frames: rules, warm", "by call-frame rules, warm (every rule cached)", 1000),
    ("one unwind, 30 frames: rules, cold", "by call-frame rules, cold (every rule found afresh, as through new code)", 1000),
    ("one unwind, 30 frames: libunwind, warm", "by libunwind, warm", 1000),
    ("one unwind, 30 frames: libunwind, first on a new thread", "by libunwind, a new thread's first, its global cache flushed (the old handler's cold case)", 1),
]


def observer_report(results, observer_dirs):
    """observer.md: the launch the sampler slows, worst of the observer runs; unwind costs; the tick's floor."""
    get = getter(results)
    runs = []
    for raw_dir in observer_dirs:
        run = load(raw_dir)
        if (TTFF, "liftoff1kPPM") not in run:
            raise SystemExit(f"report.py: no observer results in {raw_dir}.")
        runs.append(run)
    lines = ["# The observer effect", ""]
    lines.append(f"Measured {datetime.date.today().isoformat()} on {platform.node()} "
                 f"({os.cpu_count()} CPUs, {platform.system()} {platform.release()}), release build, by `make bench`.")
    lines.append("")
    lines.append("## A launch")
    lines.append("")
    baseline = statistics.median([v for run in runs for v in run[(TTFF, "baseline1HzNs")][1]]) / 1e6
    lines.append("`liftoff demo` (release) launched in rounds of six, in rotating order: Liftoff sampling at 1 Hz (the "
                 "baseline: one look at each thread, then nearly nothing) twice, at 1 kHz and at 10 kHz, and `perf record -e "
                 "cpu-clock -g` at 1 kHz and at 10 kHz around a launch sampled at 1 Hz; the second 1 Hz launch against the "
                 "first shows how far two launches differ when nothing differs. Each launch's main entry to "
                 "first frame comes from its profile; each round gives a ratio to its own baseline launch, so drift on "
                 f"the shared machine cancels (median baseline: {baseline:.1f} ms). The benchmark runs "
                 f"{len(runs)} times in a row; each cell is one run's median ratio (95 % bootstrap interval of the "
                 "median), and the verdict takes the worst run.")
    lines.append("")
    lines.append("| sampler | " + " | ".join(f"run {i + 1}" for i in range(len(runs))) + " | worst | goal | verdict |")
    lines.append("|---|" + "---:|" * len(runs) + "---:|---|---|")
    worst = {}
    for metric, label, goal in OBSERVER_ROWS:
        cells = []
        for run in runs:
            if (TTFF, metric) not in run:
                continue
            ratios = [v / 1e6 for v in run[(TTFF, metric)][1]]
            median = statistics.median(ratios)
            low, high = median_interval(ratios)
            cells.append(f"{median:.4f} ({low:.4f} – {high:.4f})")
            if metric not in worst or median > worst[metric][0]:
                worst[metric] = (median, low, high, len(ratios))
        if metric not in worst:
            continue
        median, low, high, _ = worst[metric]
        shown_goal = f"≤ {goal:.2f}" if goal else ""
        shown_verdict = verdict(median, high, goal) if goal else ""
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {median:.4f} | {shown_goal} | {shown_verdict} |")
    lines.append("")
    verdicts = []
    for rate, ours, theirs, goal in (("1 kHz", "liftoff1kPPM", "perf1kPPM", 1.03), ("10 kHz", "liftoff10kPPM", "perf10kPPM", 1.10)):
        if ours not in worst:
            continue
        median, low, high, _ = worst[ours]
        sentence = (f"at {rate}, Liftoff's worst run adds {(median - 1) * 100:+.1f} % (interval {(low - 1) * 100:+.1f} % "
                    f"to {(high - 1) * 100:+.1f} %) and {verdict(median, high, goal)} the {(goal - 1) * 100:.0f} % goal")
        if theirs in worst:
            perf = worst[theirs][0]
            sentence += f"; `perf record -g` adds {(perf - 1) * 100:+.1f} % at its worst, so Liftoff is " + (
                "ahead of perf" if median < perf else "not ahead of perf")
        verdicts.append(sentence)
    if "noise1HzPPM" in worst and "liftoff1kPPM" in worst:
        noise, noise_low, noise_high, _ = worst["noise1HzPPM"]
        ours = worst["liftoff1kPPM"][0]
        verdicts.append(f"at the default rate (1 kHz), the worst run's {(ours - 1) * 100:+.1f} % compares with "
                        f"{(noise - 1) * 100:+.1f} % (interval {(noise_low - 1) * 100:+.1f} % to {(noise_high - 1) * 100:+.1f} %) "
                        "between two launches that both sample at 1 Hz (its highest run)")
    if verdicts:
        lines.append("Verdict: " + "; ".join(verdicts) + ".")
        lines.append("")
    lines.append("## One unwind")
    lines.append("")
    lines.append("The handler walks a stack itself, by each frame's call-frame rules from `.eh_frame`: where the "
                 "canonical frame address is (rsp, rbp or rbx plus an offset), where the return address and the "
                 "caller's rbp and rbx were saved. Swift code keeps frame pointers, so for it that rule is a frame-pointer "
                 "step; for the C library it is what finds the caller at all. Rules are found through each object's "
                 "`.eh_frame_hdr` table, whose pages, like those of `.eh_frame`, the sampler thread makes resident and "
                 "indexes by page when the object is loaded, and are kept in a lock-free cache of one word per address. "
                 "libunwind walks only code outside every known object and rules the walk cannot follow (a canonical "
                 "frame address computed from memory). A stack of 30 frames, walked from the calling thread as a handler "
                 "walks it:")
    lines.append("")
    lines.append("| walk | median | per frame |")
    lines.append("|---|---:|---:|")
    for name, label, per_value in UNWINDS:
        if (name, "wallClock") in results:
            median = statistics.median(get(name, "wallClock")) / per_value
            lines.append(f"| {label} | {median / 1e3:.2f} µs | {median / 30:.0f} ns |")
    lines.append("")
    if ("one sample (signal, unwind, ring)", "wallClock") in results:
        one = statistics.median(get("one sample (signal, unwind, ring)", "wallClock")) / 1000
        lines.append(f"One sample of a thread by itself (signal delivery, handler, walk, ring write) takes {one / 1e3:.2f} µs: "
                     f"one core can take about {1e9 / one:,.0f} samples a second.")
        lines.append("")
    lines.append("## A running thread")
    lines.append("")
    figures = sampler_figures(results)
    lines.append("| rate | Liftoff | bare signals (an empty handler) | Liftoff beyond the floor | goal |")
    lines.append("|---|---:|---:|---:|---|")
    for name, rate in (("paired 1 kHz vs unsampled", "1 kHz"), ("paired 10 kHz vs unsampled", "10 kHz")):
        median = figures[name][0]
        floor = figures[FLOORS[name]][0]
        lines.append(f"| {rate} | {(median - 1) * 100:+.2f} % | {(floor - 1) * 100:+.2f} % | {(median - floor) * 100:+.2f} % | "
                     "within 0.5 % of the floor |")
    lines.append("")
    lines.append("A signal sent from the sampler thread to a thread running on another core costs the target far more on "
                 "this virtual machine than the handler does (the interprocessor interrupt that delivers it exits to the "
                 "hypervisor): that floor, not the walk, is what sampling at 10 kHz costs. Without a signal-free mode, the "
                 "goal is to stay within 0.5 % of it. Details of the method: [sampler.md](sampler.md).")
    lines.append("")
    return "\n".join(lines)


def paired_row(get, name, label, base_label, target, extra=()):
    """A paired benchmark's table row (pairs, baseline and treatment medians, the treatment's
    interval, any extra cells, the ratio, the target) and its verdict against `target` ns."""
    base = get(name, "baselineNs")
    treated = get(name, "treatedNs")
    ratios = [r / 1e6 for r in get(name, "ratioPPM")]
    t50 = statistics.median(treated)
    low, high = median_interval(treated)
    cells = [label, str(len(ratios)), f"{statistics.median(base) / 1e6:.1f} ms ({base_label})", f"{t50 / 1e6:.1f} ms",
             f"{low / 1e6:.1f} – {high / 1e6:.1f} ms", *extra, f"{statistics.median(ratios):.2f}", f"≤ {target / 1e6:.0f} ms"]
    return "| " + " | ".join(cells) + " |", verdict(t50, high, target)


def paired_report_start(results, title, target, name, missing):
    """A paired report's heading and where it was measured, and whether `name` has results:
    (lines, True), or (the whole report saying `missing`, False)."""
    lines = [f"# {title}", ""]
    lines.append(f"Measured {datetime.date.today().isoformat()} on {platform.node()} ({os.cpu_count()} CPUs), "
                 f"release build, by `make {target}`.")
    lines.append("")
    if (name, "ratioPPM") not in results:
        lines.append(f"{missing}: run `make {target}`.")
        return "\n".join(lines) + "\n", False
    return lines, True


def history_report(results):
    analyze = "paired history: analyze 1,000 commits x 50 metrics vs reading them"
    add = "paired history: add one commit of 5 runs vs loading its runs"
    lines, measured = paired_report_start(results, "The launch history", "bench-history", analyze, "No history results")
    if not measured:
        return lines
    get = getter(results)
    lines.append("Each treatment is paired with its baseline in alternating order. The store holds 1,000 entries of "
                 "50 metrics and 200 functions (a folder of JSON files, 10 of the metrics with a 4 % step); "
                 "analyzing reads them and finds the change points of every metric and of the 50 busiest functions. "
                 "Adding reads the 5 launch-sized profiles of a recording (2,000 samples each), makes their entry "
                 "(every metric group, the insights, the top functions) and writes it; its baseline only reads the "
                 "profiles. *Beyond the baseline* is the treatment's time less its baseline's, pair by pair.")
    lines.append("")
    lines.append("| work | pairs | baseline median | treatment median | its 95 % interval | beyond the baseline, median | "
                 "ratio median | target |")
    lines.append("|---|---:|---:|---:|---|---:|---:|---|")
    verdicts = []
    for name, label, base_label, target in ((analyze, "analyze 1,000 × 50", "read the entries", 1e9),
                                             (add, "add one commit", "read the profiles", 50e6)):
        added = get(name, "addedNs") if (name, "addedNs") in results else []
        beyond = f"{statistics.median(added) / 1e6:.1f} ms" if added else "–"
        row, met = paired_row(get, name, label, base_label, target, extra=[beyond])
        lines.append(row)
        verdicts.append(f"{label} {met} its {target / 1e6:.0f} ms target")
        if name == add and added:
            a50 = statistics.median(added)
            _, a_high = median_interval(added)
            verdicts.append(f"making and writing the entry, beyond reading the profiles, "
                            f"{verdict(a50, a_high, target)} it")
    lines.append("")
    lines.append("Verdict: " + "; ".join(verdicts) + ".")
    lines.append("")
    return "\n".join(lines)


def single_paired_report(results, name, title, make_target, intro, label, base_label, target_ns, work):
    """A report of one paired benchmark: its heading, `intro`, its row and its verdict."""
    lines, measured = paired_report_start(results, title, make_target, name, "No results")
    if not measured:
        return lines
    lines.append(intro)
    lines.append("")
    lines.append("| work | pairs | baseline median | treatment median | its 95 % interval | ratio median | target |")
    lines.append("|---|---:|---:|---:|---|---:|---|")
    row, met = paired_row(getter(results), name, label, base_label, target_ns)
    lines.append(row)
    lines.append("")
    lines.append(f"Verdict: {work} {met} its {target_ns / 1e6:g} ms target." if target_ns < 1e9
                 else f"Verdict: {work} {met} its {target_ns / 1e9:g} s target.")
    lines.append("")
    return "\n".join(lines)


def counts_report(results):
    return single_paired_report(
        results, "paired counts: read a 50 MB callgrind file vs its bytes", "Reading counted launches", "bench-counts",
        "A callgrind output of 50 MB in callgrind's own shape (compressed object, file and function names, "
        "relative positions, 24 cost lines and 3 `calls=` lines per function block, 30,000 functions) is read "
        "by `CallgrindCounts`: the instructions in all and per function, self and inclusive. Its baseline, "
        "paired in alternating order, reads the file's bytes.",
        "read 50 MB of counts", "read the bytes", 2e9, "reading the counts")


def cache_report(results):
    return single_paired_report(
        results, "paired cache: evict and check 100 MB in 20 files vs kernel eviction alone", "Evicting a launch's files",
        "bench-cache",
        "Before each cold run, `--cache cold` evicts the launch's files and checks what stayed in memory "
        "(`PageCache.evict`: `fdatasync`, `posix_fadvise(POSIX_FADV_DONTNEED)`, `fstat`, `mincore` on a "
        "mapping of each file, and for what stayed, the processes that map it). Here 20 files of 5 MB on "
        "a disk-backed file system, read back into memory before each side; the baseline, paired in "
        "alternating order, is the kernel's eviction alone (`posix_fadvise` of each file).",
        "evict and check 100 MB", "posix_fadvise alone", 50e6, "evicting and checking")


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "--spread":
        os.makedirs(sys.argv[2], exist_ok=True)
        write(sys.argv[2], "spread.md", spread_report(sys.argv[3:]))
        return
    single = {"agent": agent_report, "scheduler": scheduler_report, "history": history_report, "counts": counts_report,
              "cache": cache_report, "reports": reports_report}
    if len(sys.argv) == 5 and sys.argv[1] == "--only" and sys.argv[2] == "sampler":
        # sampler.md from a run of SamplerBenchmarks alone (`make bench-sampler`), with the perf
        # agreement section `make perf-agreement` left in OUT_DIR.
        results = load(sys.argv[3])
        os.makedirs(sys.argv[4], exist_ok=True)
        made_by = "`make bench-sampler` (package-benchmark; raw samples in `Reports/benchmarks/raw-sampler/`)"
        write(sys.argv[4], "sampler.md", sampler_report(results, made_by) + perf_agreement_section(sys.argv[4]))
        return
    if len(sys.argv) == 5 and sys.argv[1] == "--only" and sys.argv[2] in single:
        # One report from a run of its own benchmarks (`make bench-agent`, a target run alone).
        results = load(sys.argv[3])
        os.makedirs(sys.argv[4], exist_ok=True)
        write(sys.argv[4], sys.argv[2] + ".md", single[sys.argv[2]](results))
        return
    if len(sys.argv) != 3:
        raise SystemExit("usage: report.py RAW_DIR OUT_DIR | report.py --spread OUT_DIR RAW_DIR... | "
                         "report.py --only sampler|agent|scheduler|history|counts|cache|reports RAW_DIR OUT_DIR")
    results = load(sys.argv[1])
    if not results:
        raise SystemExit(f"report.py: no benchmark results in {sys.argv[1]}.")
    os.makedirs(sys.argv[2], exist_ok=True)
    write(sys.argv[2], "sampler.md", sampler_report(results) + perf_agreement_section(sys.argv[2]))
    write(sys.argv[2], "runtime.md", runtime_report(results))
    write(sys.argv[2], "scheduler.md", scheduler_report(results))
    write(sys.argv[2], "watch.md", watch_report(results))
    write(sys.argv[2], "reports.md", reports_report(results))
    write(sys.argv[2], "compare.md", compare_report(results))
    write(sys.argv[2], "agent.md", agent_report(results))
    write(sys.argv[2], "counts.md", counts_report(results))
    write(sys.argv[2], "cache.md", cache_report(results))
    observer_dirs = sorted(glob.glob(os.path.join(sys.argv[1], "observer-*")))
    if observer_dirs:
        write(sys.argv[2], "observer.md", observer_report(results, observer_dirs))


if __name__ == "__main__":
    main()
