import Benchmark
import Foundation
import Glibc

// What following a tree of processes costs: launches that are trees (a shell script and the
// programs it runs), each timed from inside by the script itself, bare, under `liftoff profile`
// (children followed, the default), under `liftoff profile --no-children`, and under
// `perf record -g` (which follows children too), in rounds of the four in rotating order.
// `Reports/benchmarks/agent.md` is written from these results by `make bench`.

/// A launch that is a tree of processes: the body of a bash script, which the script times itself
/// (bash's EPOCHREALTIME, no process of its own) and writes to `$TREE_LOG` in microseconds.
struct ProcessTree: Sendable {
    var name: String
    var body: String

    /// The script's text.
    var script: String {
        """
        #!/bin/bash
        start=${EPOCHREALTIME/./}
        \(body)
        end=${EPOCHREALTIME/./}
        echo $(( end - start )) > "$TREE_LOG"
        """
    }
}

/// The folder of the trees' scripts, a version-manager-style shim and a small built package.
let treeFolder: URL = {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("liftoff-tree-bench-\(getpid())")
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    // A shim as version managers install them: it reads the version file, finds its own folder
    // and the real program through a few small programs, then hands over to a second script that
    // runs hooks, and that one runs the program with exec.
    let shim = """
        #!/bin/sh
        version=$(cat "$(dirname "$0")/version")
        root=$(readlink -f "$(dirname "$0")")
        name=$(basename "$0")
        exec sh "$root/libexec" "$version" "$@"
        """
    // The program is found here, once: `perf record` puts its own folders first in PATH, where
    // the system's python3 would stand in for the user's (a version manager's own shim, say).
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    let python = path.split(separator: ":").map { "\($0)/python3" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    let libexec = """
        #!/bin/sh
        shift
        for hook in exec rehash which; do
            found=$(env | grep -c "^PATH=")
        done
        exec "\(python ?? "/usr/bin/python3")" "$@"
        """
    try? shim.write(to: folder.appendingPathComponent("python3"), atomically: true, encoding: .utf8)
    try? libexec.write(to: folder.appendingPathComponent("libexec"), atomically: true, encoding: .utf8)
    try? "3.11\n".write(to: folder.appendingPathComponent("version"), atomically: true, encoding: .utf8)
    chmod(folder.appendingPathComponent("python3").path, 0o755)
    return folder
}()

/// A package with one small executable, built once: `swift build` then has nothing to do.
let builtPackage: URL? = {
    let package = treeFolder.appendingPathComponent("package")
    let sources = package.appendingPathComponent("Sources/Tiny")
    try? FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
    let manifest = """
        // swift-tools-version:6.0
        import PackageDescription
        let package = Package(name: "Tiny", targets: [.executableTarget(name: "Tiny")])
        """
    try? manifest.write(to: package.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
    try? "print(\"tiny\")\n".write(to: sources.appendingPathComponent("main.swift"), atomically: true, encoding: .utf8)
    let swift = ["/usr/bin/swift", "/opt/swift/usr/bin/swift"].first { FileManager.default.isExecutableFile(atPath: $0) }
    guard let swift, spawnAndWait([swift, "build", "--package-path", package.path], silencingOutput: true) == 0 else { return nil }
    return package
}()

/// The trees: `/bin/true` alone, 40 short programs, a shim in front of python3, and a no-op build.
let processTrees: [ProcessTree] = {
    var trees = [
        ProcessTree(name: "true", body: "/bin/true"),
        ProcessTree(
            name: "a 40-process shell tree",
            body: """
                for round in 1 2 3 4 5 6 7 8; do
                    /bin/true; env > /dev/null; readlink -f /bin/sh > /dev/null
                    sed -n 1p /etc/hostname > /dev/null; grep -c root /etc/passwd > /dev/null
                done
                """),
        ProcessTree(name: "a shim in front of python3 -c pass", body: "\(treeFolder.path)/python3 -c pass"),
    ]
    if let package = builtPackage {
        trees.append(ProcessTree(name: "a no-op swift build", body: "swift build --package-path \(package.path) > /dev/null"))
    }
    return trees
}()

/// The variants of a tree's launch: its metric, and the command in front of the script (none: bare).
func treeVariants(binary: String, out: String) -> [(metric: BenchmarkMetric, prefix: [String])] {
    var variants: [(BenchmarkMetric, [String])] = [
        (.custom("bareUs", polarity: .prefersSmaller, useScalingFactor: false), []),
        (.custom("liftoffPPM", polarity: .prefersSmaller, useScalingFactor: false), [binary, "profile", "--out", out + "/profile", "--"]),
        (
            .custom("noChildrenPPM", polarity: .prefersSmaller, useScalingFactor: false),
            [binary, "profile", "--no-children", "--out", out + "/profile", "--"]
        ),
    ]
    if perfWorks {
        variants.append(
            (
                .custom("perfPPM", polarity: .prefersSmaller, useScalingFactor: false),
                ["/usr/bin/perf", "record", "-q", "-e", "cpu-clock", "-F", "1000", "-g", "-o", out + "/perf.data", "--"]
            ))
    }
    return variants
}

/// One launch of `script` behind `prefix`: the microseconds the script measured, or nil.
func treeLaunch(_ prefix: [String], script: String, log: String) -> UInt64? {
    unlink(log)
    guard spawnAndWait(prefix + ["/bin/bash", script], adding: ["TREE_LOG": log]) == 0,
        let text = try? String(contentsOfFile: log, encoding: .utf8)
    else { return nil }
    return UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines))
}

/// One benchmark per tree: the bare time (`bareUs`) and each variant's ratio to it in the same round.
func processTreeBenchmarks() {
    guard let binary = liftoffBinary else { return }
    for tree in processTrees {
        let out = treeFolder.appendingPathComponent("out-\(tree.name.filter(\.isLetter))").path
        let variants = treeVariants(binary: binary, out: out)
        Benchmark(
            "interleaved: process tree, \(tree.name): bare, Liftoff, Liftoff --no-children, perf",
            configuration: .init(
                metrics: variants.map(\.metric), units: Dictionary(uniqueKeysWithValues: variants.map { ($0.metric, .count) }),
                warmupIterations: 1, maxDuration: .seconds(120), maxIterations: 30)
        ) { benchmark in
            try? FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            let script = out + "/tree.sh"
            try tree.script.write(toFile: script, atomically: true, encoding: .utf8)
            for (round, _) in benchmark.scaledIterations.enumerated() {
                measureInRotation(benchmark, round: round, metrics: variants.map(\.metric)) { index in
                    treeLaunch(variants[index].prefix, script: script, log: out + "/elapsed")
                }
            }
        }
    }
}
