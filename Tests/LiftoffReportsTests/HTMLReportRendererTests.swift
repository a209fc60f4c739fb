import Foundation
import LiftoffProfile
import LiftoffTestSupport
import Testing

@testable import LiftoffReports

@Suite("HTML report", .timeLimit(.minutes(5)))
struct HTMLReportRendererTests {
    private func data(_ profile: Profile, renderer: HTMLReportRenderer = HTMLReportRenderer()) throws -> [String: Any] {
        let json = renderer.dataJSON(profile)
        return try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
    }

    @Test("the page is self-contained: one data element, one script, nothing loaded from elsewhere")
    func selfContained() {
        let page = HTMLReportRenderer().render(launchProfile())
        #expect(page.hasPrefix("<!DOCTYPE html>"))
        #expect(page.components(separatedBy: "<script").count - 1 == 2)
        #expect(page.components(separatedBy: "</script>").count - 1 == 2)
        #expect(page.contains("<script type=\"application/json\" id=\"liftoff-data\">"))
        #expect(page.contains("default-src 'none'"))
        // The SVG namespace is a name, not something to load.
        let loadable = page.replacingOccurrences(of: "http://www.w3.org/2000/svg", with: "")
        for remote in ["http://", "https://", "src=\"", "<link", "@import", "url("] {
            #expect(!loadable.contains(remote), "the page refers to \(remote)")
        }
    }

    @Test("a violation's stack starts at the first frame outside Liftoff, its own frames counted in one line")
    func violationStacksStartAtUserCode() throws {
        var profile = launchProfile()
        let first = profile.frames.count
        profile.frames += [
            Profile.Frame(name: "App.main() -> ()", object: "app"),
            Profile.Frame(name: "App.show(Liftoff.Label) -> ()", object: "app"),
            Profile.Frame(name: "Liftoff.Label.text.setter : Swift.String", object: "app"),
            Profile.Frame(name: "static Liftoff.ThreadRules.record(rule: Swift.String) -> ()", object: "app"),
        ]
        var parent = -1
        for offset in 0..<4 {
            profile.stacks.parent.append(parent)
            profile.stacks.frame.append(first + offset)
            parent = profile.stacks.count - 1
        }
        profile.violations = [
            Profile.Violation(rule: "ui-on-main", message: "m", threadID: 1, threadName: "main", timeNs: 0, stack: parent, count: 1)
        ]
        let violations = try #require(try data(profile)["violations"] as? [[String: Any]])
        let stack = try #require(violations.first?["stack"] as? [String])
        #expect(stack == ["(2 Liftoff frames)", "App.show(Liftoff.Label) -> ()", "App.main() -> ()"])
    }

    @Test("frames show their short names; the full signature rides along for tooltips and search")
    func shortNames() throws {
        var profile = launchProfile()
        let full = "LiftoffDemo.Parser.parse(Swift.String) -> Swift.Int"
        let parse = try #require(profile.frames.firstIndex { $0.name == "parse" })
        profile.frames[parse] = Profile.Frame(name: full, object: "app", short: "Parser.parse(_:)")
        let data = try data(profile)
        let names = try #require(data["names"] as? [String])
        let fullNames = try #require(data["fullNames"] as? [Any])
        #expect(names.count == fullNames.count)
        let index = try #require(names.firstIndex(of: "Parser.parse(_:)"))
        #expect(fullNames[index] as? String == full)
        #expect(!names.contains(full), "the page draws the short name")
        #expect(fullNames.filter { $0 is String }.count == 1, "names that are already full carry nothing")
    }

    @Test("the embedded data has the header, phases, trees, bars, tasks and violations of the profile")
    func dataContents() throws {
        let data = try data(launchProfile())
        #expect(data["title"] as? String == "Liftoff launch report: app")
        #expect(data["ttffMs"] as? Double == 4.5)
        #expect(data["targetMs"] as? Double == 400)
        let phases = try #require(data["phases"] as? [[String: Any]])
        #expect(phases.map { $0["name"] as? String } == ["pre-main", "launch (main → first frame)", "after first frame"])
        let names = try #require(data["names"] as? [String])
        let flame = try #require(data["flame"] as? [String: Any])
        let merged = try #require(flame["merged"] as? [String: [Int]])
        #expect(merged["name"]?.map { names[$0] } == ["all", "main", "draw", "launch", "parse"])
        #expect(merged["total"] == [6, 6, 2, 4, 2])
        #expect(merged["parent"] == [-1, 0, 1, 1, 3])
        let threads = try #require(data["threads"] as? [[String: Any]])
        #expect(threads.map { $0["label"] as? String } == ["main (1)", "worker (2)"])
        let bars = try #require(threads[0]["bars"] as? [String: [Double]])
        #expect(bars["name"]?.map { names[Int($0)] } == ["main", "launch", "draw"])
        #expect(bars["start"] == [1, 1, 3])
        #expect(bars["end"] == [5, 3, 5])
        let spans = try #require(threads[0]["spans"] as? [[String: Any]])
        #expect(spans.map { $0["name"] as? String } == ["didFinishLaunching", "build views", "prefetch"])
        #expect(spans.map { $0["critical"] as? Bool } == [false, true, false])
        let tasks = try #require(data["tasks"] as? [[String: Any]])
        #expect(tasks.map { $0["couldDefer"] as? Bool } == [false, false, true])
        #expect(tasks[1]["dependencies"] as? [String] == ["read"])
        let violations = try #require(data["violations"] as? [[String: Any]])
        #expect(violations.first?["stack"] as? [String] == ["parse — Parse.swift:12", "launch", "main"])
        #expect((data["locations"] as? [Any])?.compactMap { $0 as? String }.contains("Parse.swift:12") == true)
        let markers = try #require(data["markers"] as? [[String: Any]])
        #expect(markers.map { $0["kind"] as? String } == ["state", "state", "firstFrame"])
    }

    @Test("the timeline puts the threads on the path to ready first, the longest on it first, and marks their stretches")
    func pathFirst() throws {
        var launch = LaunchBuilder()
        launch.endMs = 71
        launch.firstFrameMs = 71
        launch.threads += [
            Profile.ThreadInfo(id: 2, name: "loop", isMain: false), Profile.ThreadInfo(id: 3, name: "worker", isMain: false),
        ]
        // main waits 60 ms for a lock worker holds while it computes; an event loop idles throughout.
        launch.add(thread: 1, .blocked, ["main", "load_settings", "libc.so.6|pthread_mutex_lock", "libc.so.6|__lll_lock_wait"], fromMs: 1, toMs: 61)
        launch.add(thread: 2, .blocked, ["start", "libc.so.6|epoll_wait"], fromMs: 1, toMs: 71)
        launch.add(thread: 3, .running, ["start", "warm_cache"], fromMs: 1, toMs: 61)
        launch.add(thread: 1, .running, ["main", "draw"], fromMs: 61, toMs: 71)
        let threads = try #require(try data(launch.profile())["threads"] as? [[String: Any]])
        #expect(threads.map { $0["id"] as? Int } == [3, 1, 2], "worker 60 ms on the path, main 10 ms, the loop never")
        #expect(threads.map { $0["pathRank"] as? Int } == [0, 1, nil])
        #expect(threads[0]["path"] as? [Double] == [1, 61], "one stretch, its samples joined")
        #expect(threads[1]["path"] as? [Double] == [61, 71])
        #expect(threads[2]["path"] == nil)
    }

    @Test("no name can end the data element or add markup")
    func hostileNames() throws {
        var profile = hostileProfile()
        profile.tasks = [
            Profile.TaskRecord(
                name: "</script><script>alert(1)</script>", lane: "<b>", status: "completed", threadID: 1,
                startNs: 1, endNs: 5)
        ]
        profile.spans = [
            Profile.Span(name: "<img src=x onerror=alert(1)>\u{2028}", category: "span", threadID: 1, startNs: 0, endNs: 3)
        ]
        let renderer = HTMLReportRenderer()
        let json = renderer.dataJSON(profile)
        for character in ["<", ">", "&", "\u{2028}"] {
            #expect(!json.contains(character), "the data contains \(character)")
        }
        let page = renderer.render(profile)
        #expect(page.components(separatedBy: "</script>").count - 1 == 2)
        #expect(!page.contains("<img"))
        #expect(!page.contains("<b>"))
        #expect(page.contains("<title>Liftoff launch report: evil&lt;app&gt;</title>"))
        // The names come back intact when the page's script parses the data.
        let data = try data(profile)
        let names = try #require(data["names"] as? [String])
        #expect(names.contains("</script><script>alert(1)</script>"))
        #expect(names.contains("new\nline"))
        let tasks = try #require(data["tasks"] as? [[String: Any]])
        #expect(tasks.first?["name"] as? String == "</script><script>alert(1)</script>")
    }

    @Test("a large profile is capped: flame nodes, bars and the page size")
    func scale() throws {
        let profile = Profile.synthetic(samples: 200_000, distinctStacks: 20_000, tasks: 2_000)
        var renderer = HTMLReportRenderer()
        renderer.maxFlameNodes = 5_000
        renderer.maxBars = 20_000
        let data = try data(profile, renderer: renderer)
        let flame = try #require(data["flame"] as? [String: Any])
        let running = profile.samples.runningCount
        #expect(running < 200_000 && running > 100_000, "the synthetic profile has waiting samples")
        for (key, samples) in [("merged", running), ("perThread", running), ("mergedWall", 200_000), ("perThreadWall", 200_000)] {
            let tree = try #require(flame[key] as? [String: [Int]])
            let parents = try #require(tree["parent"])
            let totals = try #require(tree["total"])
            let depths = try #require(tree["depth"])
            #expect(parents.count <= 5_000)
            #expect(totals[0] == samples)
            if key.hasSuffix("Wall") {
                let waiting = try #require(tree["waiting"])
                #expect(waiting[0] == 200_000 - running)
            }
            for index in parents.indices.dropFirst() {
                // Preorder: a parent comes before its children, one level up, with at least their samples.
                #expect(parents[index] < index)
                #expect(depths[index] == depths[parents[index]] + 1)
                #expect(totals[parents[index]] >= totals[index])
            }
        }
        let threads = try #require(data["threads"] as? [[String: Any]])
        let bars = try threads.reduce(0) { count, thread in
            count + (try #require((thread["bars"] as? [String: [Double]])?["start"])).count
        }
        #expect(bars <= 20_000)
        #expect(bars > 0)
        #expect(renderer.render(profile).utf8.count < 10_000_000)
    }
}
