// swift-tools-version: 6.1

import Foundation
import PackageDescription

/// Linker scripts that make the Swift driver's `-lstdc++` and `-lm` count only when used: the
/// agent and the audit library, C only, then depend on the C library alone.
let linkerScripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Linker").path

let package = Package(
    name: "Liftoff",
    products: [
        .executable(name: "liftoff", targets: ["liftoff"]),
        .library(name: "Liftoff", targets: ["Liftoff"]),
        .library(name: "LiftoffTesting", targets: ["LiftoffTesting"]),
        .library(name: "LiftoffLogging", targets: ["LiftoffLogging"]),
        .library(name: "LiftoffTracing", targets: ["LiftoffTracing"]),
        .library(name: "LiftoffServiceLifecycle", targets: ["LiftoffServiceLifecycle"]),
        .library(name: "LiftoffProfile", targets: ["LiftoffProfile"]),
        .library(name: "LiftoffSampler", targets: ["LiftoffSampler"]),
        .library(name: "LiftoffAnalysis", targets: ["LiftoffAnalysis"]),
        .library(name: "LiftoffComparison", targets: ["LiftoffComparison"]),
        .library(name: "LiftoffHistory", targets: ["LiftoffHistory"]),
        .library(name: "LiftoffHistoryPostgres", targets: ["LiftoffHistoryPostgres"]),
        .library(name: "LiftoffReports", targets: ["LiftoffReports"]),
        .library(name: "LiftoffPprof", targets: ["LiftoffPprof"]),
        .library(name: "LiftoffEndpoint", targets: ["LiftoffEndpoint"]),
        .library(name: "LiftoffFormats", targets: ["LiftoffFormats"]),
        .library(name: "LiftoffCLI", targets: ["LiftoffCLI"]),
        // libLiftoffAgent.so: the sampler injected with LD_PRELOAD into programs without Liftoff.
        .library(name: "LiftoffAgent", type: .dynamic, targets: ["CLiftoffAgent"]),
        // libLiftoffAudit.so: the loader's timeline, object by object (LD_AUDIT), beside the agent.
        .library(name: "LiftoffAudit", type: .dynamic, targets: ["CLiftoffAudit"]),
        // libLiftoffCount.so: preloaded into counted launches (valgrind), beside the agent.
        .library(name: "LiftoffCount", type: .dynamic, targets: ["CLiftoffCount"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        // `make docs`: the DocC catalogs built with `swift package generate-documentation`.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // The sampler. It calls libunwind through weak symbols: a program that links Liftoff links
        // it (LiftoffSampler below), and the agent, which does not, loads it only if a stack needs it.
        .target(
            name: "CLiftoffSampler",
            cSettings: [.define("UNW_LOCAL_ONLY"), .define("_GNU_SOURCE")],
            linkerSettings: [.linkedLibrary("dl")]
        ),
        // Source lines and inlined frames from DWARF, through elfutils' libdw: its header (Debian
        // `libdw-dev`) at build time; `libdw.so.1` is loaded when a profile is symbolized, not linked.
        .target(name: "CLiftoffDWARF", cSettings: [.define("_GNU_SOURCE")], linkerSettings: [.linkedLibrary("dl")]),
        .target(name: "LiftoffProfile"),
        // Starting the programs the command line runs (fork, exec, pidfd, subreaper): C only.
        .target(name: "CLiftoffProcess", cSettings: [.define("_GNU_SOURCE")]),
        // HTTP POSTs through libcurl, loaded with dlopen when `liftoff push` first sends (not linked).
        .target(name: "CLiftoffHTTP", cSettings: [.define("_GNU_SOURCE")], linkerSettings: [.linkedLibrary("dl")]),
        // The injected agent: C only.
        .target(
            name: "CLiftoffAgent", dependencies: ["CLiftoffSampler"], cSettings: [.define("_GNU_SOURCE")],
            // Linked without Swift's start files and with its runtime static, so that nothing of the
            // runtime is pulled in: loading the agent costs a program no Swift runtime.
            linkerSettings: [.unsafeFlags(["-nostartfiles", "-static-stdlib", "-L", linkerScripts])]),
        // The counted launches' preload: C only, the C library alone.
        .target(
            name: "CLiftoffCount", cSettings: [.define("_GNU_SOURCE")],
            linkerSettings: [.unsafeFlags(["-nostartfiles", "-static-stdlib", "-L", linkerScripts])]),
        // The audit library: C only, no other library at all.
        .target(
            name: "CLiftoffAudit",
            // No call the compiler makes up may reach for a C library: there is none.
            cSettings: [.define("_GNU_SOURCE"), .unsafeFlags(["-fno-stack-protector", "-fno-builtin", "-ffreestanding"])],
            // Without even the C library: a library the loader audits gets a namespace of its own,
            // and a C library loaded into it costs every process about 0.25 ms. Nor the loader:
            // a library it needed would be searched for along the RUNPATH the build gives it,
            // twenty system calls a launch (audit.c finds the loader's `__libc_stack_end` itself).
            linkerSettings: [.unsafeFlags(["-nostartfiles", "-static-stdlib", "-L", linkerScripts, "-Xclang-linker", "-nostdlib"])]),
        .target(
            name: "LiftoffSampler", dependencies: ["CLiftoffSampler", "CLiftoffDWARF", "LiftoffProfile"],
            linkerSettings: [.linkedLibrary("unwind")]),
        // `Assets/` holds the HTML pages' CSS and JavaScript; `Generated/HTMLReportAssets.swift` embeds them
        // (`make assets` runs scripts/embed_assets.py).
        // What a profile says, computed once for every view: the weighted call tree, flame charts,
        // timelines, span tables, hang digests and summaries.
        .target(name: "LiftoffAnalysis", dependencies: ["LiftoffProfile"]),
        // Launches compared: statistics, verdicts, recorded run sets and their on-disk format.
        .target(name: "LiftoffComparison", dependencies: ["LiftoffProfile", "LiftoffAnalysis"]),
        // Launches over commits: entries per commit in a store, and their change points.
        .target(name: "LiftoffHistory", dependencies: ["LiftoffProfile", "LiftoffAnalysis", "LiftoffComparison"]),
        // The history in PostgreSQL, through libpq loaded when a store is opened (not linked).
        .target(name: "LiftoffHistoryPostgres", dependencies: ["LiftoffHistory"], linkerSettings: [.linkedLibrary("dl")]),
        .target(
            name: "LiftoffReports", dependencies: ["LiftoffProfile", "LiftoffAnalysis", "LiftoffComparison", "LiftoffHistory"],
            exclude: ["Assets"]),
        // pprof export: swift-protobuf's runtime, with Generated/pprof.pb.swift made from Proto/pprof.proto
        // (`make pprof-proto`), and zlib for its gzip.
        .systemLibrary(name: "CZlib", path: "Sources/CZlib"),
        .target(
            name: "LiftoffPprof",
            dependencies: ["LiftoffProfile", "LiftoffReports", "CZlib", .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            exclude: ["Proto"]),
        // A live /debug/pprof endpoint a server opts into: its own product, so the core stays lean.
        .target(name: "LiftoffEndpoint", dependencies: ["LiftoffProfile", "LiftoffSampler", "LiftoffPprof"]),
        // The one list of report formats (LiftoffReports' renderers and pprof), for the CLI, fuzzing and benchmarks.
        .target(name: "LiftoffFormats", dependencies: ["LiftoffReports", "LiftoffPprof"]),
        .target(name: "Liftoff", dependencies: ["LiftoffProfile", "LiftoffSampler"]),
        .target(name: "LiftoffTesting", dependencies: ["Liftoff"]),
        // Thread-rule violations through swift-log: its own product, so the core stays dependency-free.
        .target(name: "LiftoffLogging", dependencies: ["Liftoff", .product(name: "Logging", package: "swift-log")]),
        // A swift-distributed-tracing backend: every span a library starts lands on the timeline.
        .target(name: "LiftoffTracing", dependencies: ["Liftoff", .product(name: "Tracing", package: "swift-distributed-tracing")]),
        // A ServiceGroup's start as spans, ready when every service runs.
        .target(
            name: "LiftoffServiceLifecycle",
            dependencies: ["Liftoff", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")]),
        .target(
            name: "LiftoffDemo",
            dependencies: ["Liftoff", "LiftoffSampler", "LiftoffProfile"],
            resources: [.copy("Resources/catalog.json"), .copy("Resources/settings.json")]
        ),
        .target(
            name: "LiftoffCLI",
            dependencies: [
                "CLiftoffProcess", "CLiftoffHTTP", "Liftoff", "LiftoffProfile", "LiftoffSampler", "LiftoffAnalysis", "LiftoffComparison",
                "LiftoffReports", "LiftoffPprof", "LiftoffFormats", "LiftoffHistory", "LiftoffHistoryPostgres",
                "LiftoffDemo",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(name: "liftoff", dependencies: ["LiftoffCLI"]),
        // C code of a known shape (an always-inlined function) for the symbolizer's tests.
        .target(name: "CLiftoffTestSupport", path: "Tests/CLiftoffTestSupport"),
        // What the test targets share: the process-wide lock for tests that sample, signal or load the cores,
        // and the runners of external reference tools (jsonschema, Selenium).
        .target(name: "LiftoffTestSupport", dependencies: ["LiftoffProfile"], path: "Tests/LiftoffTestSupport"),
        .testTarget(
            name: "LiftoffSamplerTests",
            dependencies: [
                "LiftoffSampler", "CLiftoffSampler", "CLiftoffTestSupport", "LiftoffProfile", "Liftoff", "LiftoffTestSupport",
            ]),
        .testTarget(name: "LiftoffProfileTests", dependencies: ["LiftoffProfile", "LiftoffTestSupport"]),
        .testTarget(name: "LiftoffAnalysisTests", dependencies: ["LiftoffAnalysis", "LiftoffProfile", "LiftoffTestSupport"]),
        .testTarget(
            name: "LiftoffComparisonTests", dependencies: ["LiftoffComparison", "LiftoffProfile", "LiftoffTestSupport"],
            exclude: ["Fixtures"]),
        .testTarget(
            name: "LiftoffHistoryTests",
            dependencies: ["LiftoffHistory", "LiftoffHistoryPostgres", "LiftoffComparison", "LiftoffProfile", "LiftoffTestSupport"]),
        .testTarget(
            name: "LiftoffTests",
            dependencies: [
                "Liftoff", "LiftoffTesting", "LiftoffLogging", "LiftoffTracing", "LiftoffServiceLifecycle", "LiftoffSampler",
                "LiftoffProfile", "LiftoffComparison", "LiftoffReports", "LiftoffDemo", "LiftoffTestSupport", "CLiftoffTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]),
        .testTarget(
            name: "LiftoffReportsTests",
            dependencies: ["LiftoffReports", "LiftoffAnalysis", "LiftoffComparison", "LiftoffProfile", "LiftoffTestSupport"]),
        .testTarget(
            name: "LiftoffCLITests",
            dependencies: [
                "LiftoffCLI", "LiftoffProfile", "LiftoffAnalysis", "LiftoffComparison", "LiftoffReports", "LiftoffFormats",
                "LiftoffHistory", "LiftoffEndpoint", "LiftoffTestSupport",
            ]),
        // The repository itself: file sizes, the documentation's layout, code and links against the tree.
        .testTarget(name: "RepositoryTests", dependencies: ["LiftoffTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
