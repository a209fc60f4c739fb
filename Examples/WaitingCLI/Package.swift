// swift-tools-version: 6.1

import PackageDescription

// A command-line tool whose launch waits three ways in a row (slow storage, a lock a warm-up
// thread holds, a reply from a background queue), recorded with Liftoff's LaunchRecorder: each
// span's waiting time is what it waited, and each wait is named where it happened.
let package = Package(
    name: "WaitingCLI",
    dependencies: [.package(name: "Liftoff", path: "../..")],
    targets: [
        .target(name: "WaitingCLICore", dependencies: [.product(name: "Liftoff", package: "Liftoff")]),
        .executableTarget(
            name: "WaitingCLI", dependencies: ["WaitingCLICore", .product(name: "Liftoff", package: "Liftoff")]),
        .testTarget(
            name: "WaitingCLITests",
            dependencies: [
                "WaitingCLICore", .product(name: "Liftoff", package: "Liftoff"),
                .product(name: "LiftoffAnalysis", package: "Liftoff"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
