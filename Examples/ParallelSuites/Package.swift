// swift-tools-version: 6.1

import PackageDescription

// A library with UI code and its tests, in Swift Testing suites that run in parallel and in
// XCTest cases, checked by LiftoffTesting: UI work that stays on the main actor passes; UI work
// done from a background queue fails the test that caused it, with its call site.
let package = Package(
    name: "ParallelSuites",
    dependencies: [
        .package(name: "Liftoff", path: "../.."),
    ],
    targets: [
        .target(name: "Inbox", dependencies: [.product(name: "Liftoff", package: "Liftoff")]),
        .testTarget(
            name: "InboxTests",
            dependencies: ["Inbox", .product(name: "LiftoffTesting", package: "Liftoff")]),
    ],
    swiftLanguageModes: [.v6]
)
