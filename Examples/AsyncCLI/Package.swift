// swift-tools-version: 6.1

import PackageDescription

// A command-line tool whose startup is async, as a server's is, profiled with Liftoff's
// LaunchRecorder: its spans get the samples of the code they ran, on whatever pool threads.
let package = Package(
    name: "AsyncCLI",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "Liftoff", path: "../..")],
    targets: [
        .target(name: "AsyncCLICore", dependencies: [.product(name: "Liftoff", package: "Liftoff")]),
        .executableTarget(name: "AsyncCLI", dependencies: ["AsyncCLICore", .product(name: "Liftoff", package: "Liftoff")]),
        .testTarget(
            name: "AsyncCLITests",
            dependencies: ["AsyncCLICore", .product(name: "Liftoff", package: "Liftoff")]),
    ],
    swiftLanguageModes: [.v6]
)
