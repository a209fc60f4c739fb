import Testing

@testable import LiftoffSampler

@Suite("Thread names")
struct ThreadNamingTests {
    @Test(
        "a Dispatch worker's cut root-queue label is restored; a program's own short name that ends a label stays its own",
        arguments: [
            ("r-initiated-qos", false, "dispatch worker (user-initiated-qos)"),
            ("-qos.overcommit", false, "dispatch worker (overcommit)"),
            ("com.apple.root.default-qos", false, "dispatch worker (default-qos)"),
            ("t", false, "t"),
            ("qos", false, "qos"),
            ("commit", false, "commit"),
            ("two-threads", false, "two-threads"),
            ("anything", true, "main"),
        ])
    func readable(kernelName: String, isMain: Bool, expected: String) {
        #expect(ThreadNaming.readable(kernelName, isMain: isMain) == expected)
    }
}
