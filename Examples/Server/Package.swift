// swift-tools-version: 6.1

import PackageDescription

// A Hummingbird 2 server whose startup steps are tracing spans (swift-distributed-tracing's
// withSpan) and whose HTTP service runs in a ServiceGroup. Bootstrapped with Liftoff's tracer,
// every span lands in the launch profile; the tests record it with `liftoff record --ready`.
// What both servers run on: the routes, Hummingbird, the service group and its logger.
let serverDependencies: [Target.Dependency] = [
    "ServerCore",
    .product(name: "Hummingbird", package: "hummingbird"),
    .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
    .product(name: "Logging", package: "swift-log"),
]

let package = Package(
    name: "Server",
    dependencies: [
        .package(name: "Liftoff", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", exact: "1.7.3"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
    ],
    targets: [
        .target(
            name: "ServerCore",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]),
        .executableTarget(
            name: "Server",
            dependencies: serverDependencies + [
                .product(name: "Liftoff", package: "Liftoff"),
                .product(name: "LiftoffTracing", package: "Liftoff"),
                .product(name: "LiftoffServiceLifecycle", package: "Liftoff"),
                .product(name: "LiftoffEndpoint", package: "Liftoff"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]),
        // The same server without Liftoff: what the wired one is measured against after ready.
        .executableTarget(name: "BareServer", dependencies: serverDependencies),
        .testTarget(
            name: "ServerTests",
            dependencies: [
                "ServerCore",
                .product(name: "Liftoff", package: "Liftoff"),
                .product(name: "LiftoffTracing", package: "Liftoff"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
