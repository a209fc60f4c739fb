// swift-tools-version: 6.1

import PackageDescription

// libFuzzer targets for what Liftoff reads from users: profiles, scenario scripts, the
// --baseline command line and callgrind's output. Built normally, each target replays files (a corpus) through its
// check; built by `make fuzz` (-sanitize=fuzzer -DFUZZING), it is a libFuzzer binary.
let package = Package(
    name: "LiftoffFuzz",
    dependencies: [
        .package(name: "Liftoff", path: ".."),
    ],
    targets: [
        .target(name: "FuzzDriver"),
        .executableTarget(
            name: "FuzzProfile",
            dependencies: [
                "FuzzDriver", .product(name: "LiftoffProfile", package: "Liftoff"),
                .product(name: "LiftoffFormats", package: "Liftoff"),
            ]),
        .executableTarget(name: "FuzzScenario", dependencies: ["FuzzDriver", .product(name: "Liftoff", package: "Liftoff")]),
        .executableTarget(name: "FuzzShellWords", dependencies: ["FuzzDriver", .product(name: "LiftoffCLI", package: "Liftoff")]),
        .executableTarget(
            name: "FuzzCallgrind", dependencies: ["FuzzDriver", .product(name: "LiftoffComparison", package: "Liftoff")]),
        .executableTarget(name: "FuzzHistory", dependencies: ["FuzzDriver", .product(name: "LiftoffHistory", package: "Liftoff")]),
    ],
    swiftLanguageModes: [.v6]
)
