// swift-tools-version: 6.1

import PackageDescription

// An app on Application.main: its launch is a LaunchPlan that the scheduler runs (I/O and
// parsing in the background, views on the main thread, indexing after the first frame), recorded
// into a profile. The tests launch it on a manual clock and run the real executable.
let package = Package(
    name: "LaunchApp",
    dependencies: [
        .package(name: "Liftoff", path: "../.."),
    ],
    targets: [
        .target(name: "NotesKit", dependencies: [.product(name: "Liftoff", package: "Liftoff")]),
        .executableTarget(name: "Notes", dependencies: ["NotesKit", .product(name: "Liftoff", package: "Liftoff")]),
        .testTarget(
            name: "NotesKitTests",
            dependencies: ["NotesKit", .product(name: "LiftoffTesting", package: "Liftoff")]),
    ],
    swiftLanguageModes: [.v6]
)
