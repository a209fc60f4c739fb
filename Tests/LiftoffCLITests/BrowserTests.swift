import Foundation
import LiftoffProfile
import LiftoffTestSupport
import Testing

/// Loads HTML reports in headless Chromium (`make test` installs it) and checks the DOM the
/// page's script builds.
@Suite("HTML report in a browser", .serialized, .processState(timeLimit: .seconds(300)))
struct BrowserTests {
    /// Chromium's path, or nil when it is not installed.
    static let chromium: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    /// The DOM after the page's scripts ran.
    static func dumpDOM(_ page: URL) throws -> String {
        let browser = try #require(chromium, "Chromium is not installed; `make test` installs it with apt-get")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: browser)
        let profileFolder = temporaryFolder().appendingPathComponent("chromium-profile")
        defer { try? FileManager.default.removeItem(at: profileFolder.deletingLastPathComponent()) }
        process.arguments = [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--user-data-dir=\(profileFolder.path)", "--dump-dom", page.absoluteString,
        ]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "chromium exited with \(process.terminationStatus)")
        return String(decoding: data, as: UTF8.self)
    }

    static func count(_ needle: String, in text: String) -> Int { text.components(separatedBy: needle).count - 1 }

    /// The opening tag of the element with `id` in a dumped DOM, or "" when there is none.
    static func tag(withID id: String, in dom: String) -> String {
        guard let found = dom.range(of: "id=\"\(id)\"") else { return "" }
        let start = dom[..<found.lowerBound].range(of: "<", options: .backwards)?.lowerBound ?? found.lowerBound
        let end = dom[found.upperBound...].firstIndex(of: ">") ?? dom.endIndex
        return String(dom[start..<end])
    }

    /// Writes `profile`, renders it with `liftoff report`, and returns the page and its DOM after
    /// the script ran; records an issue when the script did not finish or reported an error.
    static func renderedReport(
        _ profile: Profile, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> (page: URL, dom: String) {
        let folder = temporaryFolder()
        let profileURL = folder.appendingPathComponent("profile.json")
        try profile.write(to: profileURL)
        let page = folder.appendingPathComponent("index.html")
        let result = try BuiltTool.find().run(["report", profileURL.path, "-o", page.path])
        #expect(result.status == 0, "stderr: \(result.stderr)", sourceLocation: sourceLocation)
        let dom = try dumpDOM(page)
        #expect(dom.contains("data-ready=\"true\""), "the script finished drawing", sourceLocation: sourceLocation)
        #expect(!dom.contains("id=\"report-error\""), "the script reported an error", sourceLocation: sourceLocation)
        return (page, dom)
    }

    @Test("the demo's report runs its script without errors and draws the flame graph and flame charts")
    func demoReport() throws {
        let folder = temporaryFolder()
        let result = try BuiltTool.find().run(["demo", "--out", folder.path, "--rate", "500", "--linger", "0", "--quiet"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let dom = try BrowserTests.dumpDOM(folder.appendingPathComponent("index.html"))
        #expect(dom.contains("data-ready=\"true\""), "the script finished drawing")
        #expect(!dom.contains("id=\"report-error\""), "the script reported an error")
        #expect(dom.contains("id=\"flame-graph\""))
        #expect(BrowserTests.count("class=\"fg-frame", in: dom) > 10, "the flame graph has frames")
        #expect(dom.contains("class=\"flame-chart"))
        #expect(BrowserTests.count("class=\"fc-bar", in: dom) > 10, "the flame charts have bars")
        #expect(dom.contains("parse catalogue"), "the task table names the demo's tasks")
    }

    @Test("CPU shows where threads ran; wall clock adds their waits in grey, in the flame graph and the charts")
    func wallClockSwitch() throws {
        let (page, cpu) = try BrowserTests.renderedReport(waitingBrowserProfile())
        #expect(BrowserTests.tag(withID: "samples-cpu", in: cpu).contains("aria-pressed=\"true\""))
        // A drawn element's class attribute ends with the class (the script's source has it in quotes).
        #expect(BrowserTests.count(" fg-waiting\"", in: cpu) == 0, "CPU counts running samples only")
        #expect(BrowserTests.count(" fc-waiting\"", in: cpu) == 0, "CPU draws no waits in the charts")
        #expect(cpu.contains("compute"))
        #expect(!cpu.contains(">ppoll<"), "a wait is not drawn as CPU")

        var wallURL = URLComponents(url: page, resolvingAgainstBaseURL: false)!
        wallURL.fragment = "wall"
        let wall = try BrowserTests.dumpDOM(wallURL.url!)
        #expect(wall.contains("data-ready=\"true\""))
        #expect(!wall.contains("id=\"report-error\""))
        #expect(BrowserTests.tag(withID: "samples-wall", in: wall).contains("aria-pressed=\"true\""))
        #expect(BrowserTests.count(" fg-waiting\"", in: wall) >= 1, "the wait is in the flame graph, greyed")
        #expect(BrowserTests.count(" fc-waiting\"", in: wall) >= 1, "the wait is in the thread's chart, greyed")
        #expect(BrowserTests.count("fill=\"#e3c9a8\"", in: wall) >= 1, "the runnable stretch has its own colour")
        #expect(BrowserTests.count("fill=\"#e3c9a8\"", in: cpu) == 0, "CPU draws no runnable stretch")
    }

    @Test("the phase bar shows the wrappers apart and says what the loader's time went to")
    func preMainNote() throws {
        var profile = waitingBrowserProfile()
        profile.phases.programStartNs = 30_000
        profile.phases.preMain = Profile.PreMain(
            durationNs: 60_000, cpuNs: 40_000, runqueueNs: 5_000, bytesRead: 2_000_000, majorFaults: 3, minorFaults: 90)
        let (_, dom) = try BrowserTests.renderedReport(profile)
        #expect(dom.contains(">wrappers<"), "the wrappers are a phase of their own")
        #expect(dom.contains("class=\"phase-note\">Loader (exec → sampling start): 0.1 ms: on CPU 0.0 ms"), "the note is drawn")
        #expect(dom.contains("read 2.0 MB from storage, 3 major and 90 minor page faults"))
    }

    /// Debian's own interpreter, where `python3-selenium` installs (a `python3` earlier on the
    /// PATH may be another one).
    static let seleniumPython = "/usr/bin/python3"

    /// Runs `Tests/Browser/report_interactions.py` on `page`; returns its exit status and output.
    /// Each of `expecting` must be in the page's text.
    static func interact(
        with page: URL, searching term: String, expecting: [String] = []
    ) throws -> (status: Int32, output: String) {
        let script = repositoryRoot.appendingPathComponent("Tests/Browser/report_interactions.py")
        let probe = try runToEnd(seleniumPython, ["-c", "import selenium"])
        try #require(
            probe.status == 0,
            "\(seleniumPython) cannot import selenium; `make test-deps` installs python3-selenium and chromium-driver")
        return try runToEnd(seleniumPython, [script.path, page.path, term] + expecting)
    }

    @Test("clicks, search, thread and sample switches, timeline zoom and pan, and table sorting work in a browser")
    func interactions() throws {
        let folder = temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try BuiltTool.find().run(["demo", "--out", folder.path, "--rate", "500", "--linger", "0", "--quiet"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let run = try BrowserTests.interact(with: folder.appendingPathComponent("index.html"), searching: "extraWork")
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("ok    the console logged no error"), "\(run.output)")
    }

    @Test("a report of 100,000 tasks and 100,000 violations loads at the default caps and pages its lists")
    func hugeReport() throws {
        var profile = Profile.synthetic(samples: 40_000, distinctStacks: 5_000, tasks: 100_000)
        profile.violations = (0..<100_000).map { index in
            Profile.Violation(
                rule: "uiOffMainThread", message: "Label.text was set off the main thread (\(index))", threadID: 2,
                threadName: "worker", timeNs: UInt64(index) * 10_000, stack: index % 2 == 0 ? 1 : nil, count: 1)
        }
        let folder = temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let profileURL = folder.appendingPathComponent("profile.json")
        try profile.write(to: profileURL)
        let page = folder.appendingPathComponent("index.html")
        let result = try BuiltTool.find().run(["report", profileURL.path, "-o", page.path])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        // The tables show their first page and say how much is left out.
        let run = try BrowserTests.interact(
            with: page, searching: "function12",
            expecting: ["Showing 200 of 100,000 tasks.", "Showing the first 500 of 100,000 violations."])
        #expect(run.status == 0, "\(run.output)")
    }

    @Test("names from the profile show as text: nothing in them becomes markup or script")
    func hostileReport() throws {
        let (_, dom) = try BrowserTests.renderedReport(hostileBrowserProfile())
        #expect(!dom.contains("<img"), "a name became an element")
        #expect(!dom.contains("<b>"), "a name became an element")
        #expect(BrowserTests.count("<script", in: dom) == 2, "a name added a script element")
        #expect(dom.contains("&lt;img src=x onerror=alert(1)&gt;"), "the name shows as text")
        #expect(dom.contains("inlined · &lt;img src=x onerror=alert(1)&gt;.swift:7"), "the source file shows as text")
    }
}

/// A main thread that computes for 40 ms, then waits in `ppoll` for 60 ms.
func waitingBrowserProfile() -> Profile {
    // 40 ms running in compute, a 40 ms wait in ppoll stored as one row, then 20 ms preempted in
    // compute (runnable, one row).
    let running = 40
    return Profile(
        metadata: testMetadata(["/bin/app"]),
        timeOriginNs: 0,
        phases: Profile.Phases(processStartNs: 0, preMainNs: 0, mainEntryNs: 100_000, endNs: 110_000_000, firstFrameNs: 50_000_000),
        threads: [Profile.ThreadInfo(id: 1, name: "main", isMain: true)],
        frames: [Profile.Frame(name: "main", object: "app"), Profile.Frame(name: "compute", object: "app"),
                 Profile.Frame(name: "ppoll", object: "libc.so.6")],
        stacks: Profile.StackTable(parent: [-1, 0, 0], frame: [0, 1, 2]),
        samples: Profile.SampleTable(
            thread: [Int](repeating: 1, count: running + 2),
            timeNs: (0..<running).map { UInt64($0 + 1) * 1_000_000 } + [41_000_000, 81_000_000],
            stack: [Int](repeating: 1, count: running) + [2, 1],
            state: [Profile.SampleState](repeating: .running, count: running) + [.blocked, .runnable],
            weight: [UInt32](repeating: 1, count: running) + [40, 20]))
}

/// A profile whose every name tries to inject markup.
func hostileBrowserProfile() -> Profile {
    let evil = ["</script><script>alert(1)</script>", "<img src=x onerror=alert(1)>", "<b>bold</b> & \"quotes\"; semi"]
    var profile = Profile(
        metadata: testMetadata(["/bin/<img src=x onerror=alert(1)>"], host: "<b>host</b>"),
        timeOriginNs: 0,
        phases: Profile.Phases(processStartNs: 0, preMainNs: 0, mainEntryNs: 100_000, endNs: 5_000_000, firstFrameNs: 3_000_000),
        threads: [Profile.ThreadInfo(id: 1, name: evil[1], isMain: true)],
        // Source files too: a violation's stack and the hang's frames show them.
        frames: evil.map { Profile.Frame(name: $0, object: "app", file: "/src/\($0).swift", line: 7, isInlined: true) },
        stacks: Profile.StackTable(parent: [-1, 0, 1], frame: [0, 1, 2]),
        samples: Profile.SampleTable(
            thread: [1, 1, 1, 1], timeNs: [1_000_000, 2_000_000, 3_000_000, 4_000_000], stack: [2, 2, 1, 0]))
    profile.tasks = [
        Profile.TaskRecord(
            name: evil[1], lane: .init(evil[2]), status: "completed", dependencies: [evil[0]], threadID: 1, threadName: evil[0],
            startNs: 1_000_000, endNs: 2_000_000, couldDefer: true)
    ]
    profile.spans = [Profile.Span(name: evil[0], category: .init(evil[1]), threadID: 1, startNs: 500_000, endNs: 2_500_000)]
    profile.marks = [Profile.Mark(name: .init(evil[2]), timeNs: 2_000_000)]
    profile.violations = [
        Profile.Violation(rule: .init(evil[0]), message: evil[1], threadID: 1, threadName: evil[2], timeNs: 1_500_000, stack: 2, count: 1)
    ]
    profile.hangs = [Profile.HangRecord(startNs: 1_000_000, durationNs: 2_000_000, running: evil[1], stacks: [2, 2])]
    return profile
}
