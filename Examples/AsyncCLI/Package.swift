// swift-tools-version: 6.1

import PackageDescription

// A command-line tool whose startup is async, as a server's is, profiled with Liftoff's
// LaunchRecorder: its spans get the samples of the code they ran, on whatever pool threads.
// Thread-rule violations go to the tool's swift-log logger as well as into the profile.
let package = Package(
    name: "AsyncCLI",
    dependencies: [
        .package(name: "Liftoff", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
    ],
    targets: [
        .target(name: "AsyncCLICore", dependencies: [.product(name: "Liftoff", package: "Liftoff")]),
        .executableTarget(
            name: "AsyncCLI",
            dependencies: [
                "AsyncCLICore", .product(name: "Liftoff", package: "Liftoff"),
                .product(name: "LiftoffLogging", package: "Liftoff"), .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "AsyncCLITests",
            dependencies: ["AsyncCLICore", .product(name: "Liftoff", package: "Liftoff")]),
    ],
    swiftLanguageModes: [.v6]
)
