// swift-tools-version: 6.1

import PackageDescription

let package = Package(
    name: "LiftoffBenchmarks",
    dependencies: [
        .package(name: "Liftoff", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // What every paired benchmark shares: measuring two sides in alternating order.
        .target(name: "BenchmarkPairs", dependencies: [.product(name: "Benchmark", package: "benchmark")], path: "BenchmarkPairs"),
        .executableTarget(
            name: "SamplerBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                "BenchmarkPairs",
                .product(name: "LiftoffSampler", package: "Liftoff"),
            ],
            path: "SamplerBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "RuntimeBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                "BenchmarkPairs",
                .product(name: "Liftoff", package: "Liftoff"),
            ],
            path: "RuntimeBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "SchedulerBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                "BenchmarkPairs",
                .product(name: "Liftoff", package: "Liftoff"),
                .product(name: "LiftoffSampler", package: "Liftoff"),
            ],
            path: "SchedulerBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "ReportBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "LiftoffFormats", package: "Liftoff"),
                .product(name: "LiftoffProfile", package: "Liftoff"),
            ],
            path: "ReportBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "CompareBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                "BenchmarkPairs",
                .product(name: "LiftoffReports", package: "Liftoff"),
                .product(name: "LiftoffProfile", package: "Liftoff"),
                .product(name: "LiftoffCLI", package: "Liftoff"),
            ],
            path: "CompareBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "CacheBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                "BenchmarkPairs",
                .product(name: "LiftoffCLI", package: "Liftoff"),
            ],
            path: "CacheBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "HistoryBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                "BenchmarkPairs",
                .product(name: "LiftoffHistory", package: "Liftoff"),
                .product(name: "LiftoffComparison", package: "Liftoff"),
                .product(name: "LiftoffProfile", package: "Liftoff"),
            ],
            path: "HistoryBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "CountBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                "BenchmarkPairs",
                .product(name: "LiftoffComparison", package: "Liftoff"),
            ],
            path: "CountBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
