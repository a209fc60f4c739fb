import Foundation
import LiftoffTesting
import NotesKit
import Testing

@Suite("Notes launch", .threadRules)
struct NotesLaunchTests {
    @Test("on a manual clock: views after both loads, a first frame, then the count on the main thread")
    func launchRunsThePlan() throws {
        let delegate = AppDelegate()
        let driver = ApplicationDriver(delegate: delegate)
        defer { driver.close() }
        driver.send(.launch(LaunchOptions()))
        let scheduler = try #require(delegate.scheduler)
        // Tasks deferred past the first frame run one per loop iteration.
        for _ in 0..<100 where !scheduler.isFinished { driver.turn() }
        #expect(scheduler.waitUntilFinished())

        let firstFrame = try #require(driver.application.firstFrameNs)
        #expect(delegate.window?.subviews.count == 14, "the title, the count and twelve notes")
        #expect(delegate.countLabel?.text == "40000 notes")
        #expect(delegate.store.indexedWords > 0)
        let records = Dictionary(uniqueKeysWithValues: scheduler.records.map { ($0.name, $0) })
        #expect(records.values.allSatisfy { $0.status == "completed" }, "\(records.mapValues(\.status))")
        let count = try #require(records["show count"])
        #expect(try #require(count.startNs) >= firstFrame, "the count waits for the first frame")
        #expect(count.threadID == records["build views"]?.threadID, "on the main thread")
        #expect(driver.callbacks.starts(with: ["willFinishLaunching", "didFinishLaunching", "didBecomeActive"]))
    }

    @Test("the executable launches, quits by itself and writes its profile")
    func executableWritesItsProfile() throws {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("Notes")
        try #require(
            FileManager.default.isExecutableFile(atPath: executable.path), "build the app first: swift build")
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("notes-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: output) }

        let process = Process()
        process.executableURL = executable
        process.arguments = ["--quit-after-launch"]
        process.environment = ProcessInfo.processInfo.environment.merging(["LIFTOFF_PROFILE_OUT": output.path]) { $1 }
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)

        let profile = try Profile.load(from: output)
        #expect(profile.timeToFirstFrameNs != nil)
        #expect(Set(profile.tasks.map(\.name)) == ["read settings", "parse notes", "build views", "index search", "show count"])
        #expect(profile.tasks.allSatisfy { $0.status == "completed" })
        #expect(profile.spans.contains { $0.name == "didFinishLaunching" })
        #expect(profile.frames.contains { $0.name.contains("parseNotes") }, "the parsing was sampled")
        #expect(profile.violations.isEmpty, "\(profile.violations.map(\.message))")
    }
}
