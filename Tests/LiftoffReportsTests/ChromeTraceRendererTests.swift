import Foundation
import LiftoffProfile
import LiftoffTestSupport
import Testing

@testable import LiftoffReports

@Suite("Chrome trace", .timeLimit(.minutes(5)))
struct ChromeTraceRendererTests {
    @Test("a hand-made launch renders to exactly the expected trace")
    func exactOutput() {
        let expected = #"""
            {"displayTimeUnit":"ms","otherData":{"program":"app","liftoffVersion":"0.1.0","startTime":"2026-11-21T10:00:00.000Z","host":"box"},"traceEvents":[
            {"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"app"}},
            {"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{"name":"main"}},
            {"name":"thread_sort_index","ph":"M","pid":1,"tid":1,"args":{"sort_index":-1}},
            {"name":"thread_name","ph":"M","pid":1,"tid":2,"args":{"name":"worker"}},
            {"name":"thread_sort_index","ph":"M","pid":1,"tid":2,"args":{"sort_index":1}},
            {"name":"didFinishLaunching","ph":"X","pid":1,"tid":1,"ts":600,"dur":3600,"cat":"callback"},
            {"name":"build views","ph":"X","pid":1,"tid":1,"ts":2200,"dur":800,"cat":"task","args":{"lane":"main","status":"completed","queue":"","wait_ms":0.2,"cpu_ms":0.7,"critical_path":true,"could_defer":false,"dependencies":["read"]}},
            {"name":"prefetch","ph":"X","pid":1,"tid":1,"ts":3000,"dur":1000,"cat":"task","args":{"lane":"main","status":"completed","queue":"","wait_ms":0,"critical_path":false,"could_defer":true}},
            {"name":"read","ph":"X","pid":1,"tid":2,"ts":1000,"dur":1000,"cat":"task","args":{"lane":"background(utility)","status":"completed","queue":"","wait_ms":0,"cpu_ms":0.8,"critical_path":true,"could_defer":false}},
            {"name":"process start","ph":"i","pid":1,"tid":1,"ts":0,"s":"t","cat":"launch"},
            {"name":"main entry","ph":"i","pid":1,"tid":1,"ts":500,"s":"t","cat":"launch"},
            {"name":"state: notRunning → inactive","ph":"i","pid":1,"tid":1,"ts":600,"s":"t","cat":"launch"},
            {"name":"state: inactive → active","ph":"i","pid":1,"tid":1,"ts":4300,"s":"t","cat":"launch"},
            {"name":"first frame","ph":"i","pid":1,"tid":1,"ts":4500,"s":"g","cat":"launch"},
            {"name":"read → build views","ph":"s","pid":1,"tid":2,"ts":1999.999,"cat":"dependency","id":1},
            {"name":"read → build views","ph":"f","pid":1,"tid":1,"ts":2200.001,"bp":"e","cat":"dependency","id":1}
            ]}
            """#
        #expect(ChromeTraceRenderer().render(launchProfile()) == expected + "\n")
    }

    @Test("events follow the Trace Event Format: named threads, nested complete events, paired flows")
    func wellFormed() throws {
        var profile = launchProfile()
        profile.spans.append(
            Profile.Span(name: "late", category: "span", threadID: 1, startNs: 4_000_000, endNs: 5_000_000))
        profile.spans.append(
            Profile.Span(name: "on an unnamed thread", category: "span", threadID: 9, startNs: 0, endNs: 1_000))
        let document = try JSONSerialization.jsonObject(with: Data(ChromeTraceRenderer().render(profile).utf8))
        let events = try #require((document as? [String: Any])?["traceEvents"] as? [[String: Any]])
        let named = Set(events.filter { $0["name"] as? String == "thread_name" }.compactMap { $0["tid"] as? Int })
        var slices: [Int: [(start: Double, end: Double)]] = [:]
        var flows: [Int: [String]] = [:]
        for event in events {
            let phase = try #require(event["ph"] as? String)
            #expect(["M", "X", "i", "s", "f"].contains(phase))
            #expect(event["pid"] as? Int == 1)
            guard phase != "M" else { continue }
            let tid = try #require(event["tid"] as? Int)
            #expect(named.contains(tid), "thread \(tid) has a thread_name")
            let ts = try #require(event["ts"] as? Double)
            if phase == "X" {
                let duration = try #require(event["dur"] as? Double)
                #expect(duration >= 0)
                slices[tid, default: []].append((ts, ts + duration))
            }
            if phase == "s" || phase == "f" { flows[try #require(event["id"] as? Int), default: []].append(phase) }
        }
        #expect(flows.values.allSatisfy { $0 == ["s", "f"] })
        // Within a thread, slices are disjoint or nested.
        for list in slices.values {
            for a in list {
                for b in list where a.start < b.start && b.start < a.end {
                    #expect(b.end <= a.end, "slice [\(b.start), \(b.end)] overlaps [\(a.start), \(a.end)] without nesting")
                }
            }
        }
        // "late" [4000, 5000] µs was cut at the end of didFinishLaunching (4200 µs).
        let late = try #require(events.first { $0["name"] as? String == "late" })
        #expect(late["dur"] as? Double == 200)
        #expect(late["ts"] as? Double == 4000)
    }

    @Test("each Swift task job is a slice where it ran, with a flow from where it was enqueued as long as its scheduling delay")
    func asyncTaskJobs() throws {
        var profile = launchProfile()
        profile.asyncTasks = [
            Profile.AsyncTask(
                id: 5, kind: .unstructured, creator: nil, creatorThreadID: 1, createdNs: 900,
                runs: [Profile.AsyncTaskRun(enqueuedNs: 1_000, startNs: 3_000, endNs: 5_000, threadID: 2, enqueuerThreadID: 1)])
        ]
        profile.asyncTasks[0].span = 0
        let document = try JSONSerialization.jsonObject(with: Data(ChromeTraceRenderer().render(profile).utf8))
        let events = try #require((document as? [String: Any])?["traceEvents"] as? [[String: Any]])
        let jobs = events.filter { $0["pid"] as? Int == 2 }
        let process = try #require(jobs.first { $0["name"] as? String == "process_name" })
        #expect((process["args"] as? [String: Any])?["name"] as? String == "Swift task jobs")
        #expect(Set(jobs.filter { $0["name"] as? String == "thread_name" }.compactMap { $0["tid"] as? Int }) == [1, 2])
        let run = try #require(jobs.first { $0["name"] as? String == "task 5 (unstructured)" })
        #expect(run["ph"] as? String == "X" && run["tid"] as? Int == 2)
        #expect(run["ts"] as? Double == 3 && run["dur"] as? Double == 2)
        let arguments = try #require(run["args"] as? [String: Any])
        #expect(arguments["scheduled_ms"] as? Double == 0.002)
        #expect(arguments["span"] as? String == profile.spans[0].name)
        let enqueue = try #require(jobs.first { $0["name"] as? String == "enqueue task 5 (unstructured)" })
        #expect(enqueue["tid"] as? Int == 1 && enqueue["ts"] as? Double == 1)
        let start = try #require(jobs.first { $0["ph"] as? String == "s" })
        let finish = try #require(jobs.first { $0["ph"] as? String == "f" })
        #expect(start["id"] as? Int == finish["id"] as? Int)
        #expect(start["tid"] as? Int == 1 && start["ts"] as? Double == 1)
        #expect(finish["tid"] as? Int == 2 && finish["ts"] as? Double == 3 && finish["bp"] as? String == "e")
        let dependencyFlows = Set(events.filter { $0["cat"] as? String == "dependency" }.compactMap { $0["id"] as? Int })
        #expect(!dependencyFlows.contains(try #require(start["id"] as? Int)), "flow ids are not reused")
    }

    @Test("hostile names travel as JSON strings, unchanged")
    func hostileNamesUnchanged() throws {
        var profile = hostileProfile()
        profile.tasks = hostileNames.enumerated().map { index, name in
            Profile.TaskRecord(
                name: name, lane: "main", status: "completed", threadID: 1, startNs: UInt64(index) * 10,
                endNs: UInt64(index) * 10 + 5)
        }
        let document = try JSONSerialization.jsonObject(with: Data(ChromeTraceRenderer().render(profile).utf8))
        let events = try #require((document as? [String: Any])?["traceEvents"] as? [[String: Any]])
        let slices = events.filter { $0["ph"] as? String == "X" }.compactMap { $0["name"] as? String }
        #expect(slices == hostileNames)
        let threadNames = events.filter { $0["name"] as? String == "thread_name" }
            .compactMap { ($0["args"] as? [String: Any])?["name"] as? String }
        #expect(threadNames == ["main", "work;er"])
    }

    @Test("timestamps are microseconds")
    func microseconds() throws {
        let document = try JSONSerialization.jsonObject(with: Data(ChromeTraceRenderer().render(launchProfile()).utf8))
        let events = try #require((document as? [String: Any])?["traceEvents"] as? [[String: Any]])
        let firstFrame = try #require(events.first { $0["name"] as? String == "first frame" })
        #expect(firstFrame["ts"] as? Double == 4500)  // 4.5 ms
    }
}

@Suite("Markdown summary", .timeLimit(.minutes(5)))
struct MarkdownRendererTests {
    @Test("a hand-made launch renders to exactly the expected Markdown")
    func exactOutput() {
        let expected = #"""
            ## Launch profile: app

            **Time to first frame: 4.5 ms**, within the 400 ms target.

            ### Insights

            1. **Thread rules were broken** (`thread-rule-violation`): 1 violation of thread rules during the launch: prefetch blocked the main thread (at Parse.swift:12 in parse).
               threshold: any, at 3.1–3.1 ms ([timeline](index.html#t=3.100-3.100)).
               Look at `parse — Parse.swift:12`.
               *UI work off the main thread is a data race with the main thread; blocking work on the main thread during the launch delays the first frame. Each violation names the call site to change.*

            Recorded 6 samples (6 running, 0 blocked, 0 runnable) at 1000 Hz on box (2 CPUs), debug build, 2026-11-21T10:00:00.000Z.

            ### Phases

            | Phase | Start | Duration |
            |---|---:|---:|
            | process start → main entry | 0.0 ms | 0.5 ms |
            | main entry → first frame | 0.5 ms | 4.0 ms |
            | first frame → end of recording | 4.5 ms | 1.5 ms |
            | didFinishLaunching (callback) | 0.6 ms | 3.6 ms |

            ### Main thread before the first frame

            2 tasks ran there for 1.8 ms: `build views`, `prefetch`.
            Could move off the main thread or after the first frame: `prefetch`.

            ### Slowest tasks (★ on the critical path)

            | Task | Lane | Thread | Start | Duration | Wait | CPU | Could defer |
            |---|---|---|---:|---:|---:|---:|---|
            | prefetch | main | main | 3.0 ms | 1.0 ms | 0.0 ms | – | yes |
            | ★ read | background(utility) | worker | 1.0 ms | 1.0 ms | 0.0 ms | 0.8 ms |  |
            | ★ build views | main | main | 2.2 ms | 0.8 ms | 0.2 ms | 0.7 ms |  |

            ### Thread violations: 1

            | Rule | Thread | Time | Count | Message | Where |
            |---|---|---:|---:|---|---|
            | no-blocking-on-main-during-launch | main | 3.1 ms | 1 | prefetch blocked the main thread. | Parse.swift:12 in parse |

            ### Hangs: 0

            None recorded.

            ### Frames and budgets

            Frames: 0, slow (over 16.7 ms) 0, frozen (over 700 ms) 0.
            Stacks captured by signal: 0 (a thread that had not run since a sample found it blocked is recorded as still blocked there, without a signal), dropped 0, failed 0, skipped 0, truncated 0.

            ### Top functions by CPU time (running samples)

            | Self | Samples | Function |
            |---:|---:|---|
            | 33.3% | 2 | draw |
            | 33.3% | 2 | launch |
            | 33.3% | 2 | parse |
            """#
        #expect(MarkdownRenderer().render(launchProfile()) == expected + "\n")
    }

    @Test("a server's profile speaks of its ready point, not frames: the trace's instant and the Markdown's sections")
    func serverWords() throws {
        var launch = LaunchBuilder()
        launch.endMs = 60
        launch.firstFrameMs = 50
        launch.add(thread: 1, .running, ["main", "configure"], fromMs: 1, toMs: 50)
        let profile = launch.profile()
        #expect(!profile.hasLifeCycle)
        let trace = try #require(try JSONSerialization.jsonObject(with: Data(ChromeTraceRenderer().render(profile).utf8)) as? [String: Any])
        let names = (trace["traceEvents"] as? [[String: Any]] ?? []).filter { $0["ph"] as? String == "i" }.compactMap { $0["name"] as? String }
        #expect(names.contains("ready") && !names.contains("first frame"), "\(names)")
        let markdown = MarkdownRenderer().render(profile)
        #expect(!markdown.contains("Frames") && markdown.contains("### Sampling\n\nStacks captured by signal"), "\(markdown)")
    }

    @Test("a huge profile stays under 65,536 characters")
    func bounded() {
        var profile = launchProfile()
        let long = String(repeating: "verylongname|", count: 40)
        profile.tasks = (0..<10_000).map { index in
            Profile.TaskRecord(
                name: "\(long)\(index)", lane: "main", status: "completed", threadID: 1, startNs: UInt64(index) * 1000,
                endNs: UInt64(index) * 1000 + 500, couldDefer: index % 2 == 0)
        }
        profile.violations = (0..<10_000).map { index in
            Profile.Violation(
                rule: .init(long), message: long, threadID: 1, threadName: "main", timeNs: UInt64(index), stack: nil, count: 1)
        }
        profile.frames += (0..<5_000).map { Profile.Frame(name: "\(long)\($0)", object: "app") }
        for rows in [20, 1_000] {
            let text = MarkdownRenderer(rowsPerTable: rows).render(profile)
            #expect(text.count < 65_536)
            #expect(text.hasPrefix("## Launch profile: app"))
        }
        let cut = MarkdownRenderer(rowsPerTable: 1_000).render(profile)
        #expect(cut.contains("The summary was cut here"))
    }

    @Test("names cannot break a table or inject HTML")
    func escaping() {
        var profile = hostileProfile()
        profile.tasks = [
            Profile.TaskRecord(
                name: "</script><script>alert(1)</script>", lane: "a|b", status: "completed", threadID: 1,
                startNs: 1, endNs: 5)
        ]
        let text = MarkdownRenderer().render(profile)
        #expect(!text.contains("<script"))
        #expect(!text.contains("<b>"))
        #expect(text.contains("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"))
        #expect(text.contains("| a\\|b |"))
        #expect(text.contains("new line"))
        for line in text.split(separator: "\n") where line.hasPrefix("|") {
            // Every row of the task table has the header's 8 cells.
            if line.contains("alert") && line.contains("a\\|b") {
                #expect(line.replacingOccurrences(of: "\\|", with: "").filter { $0 == "|" }.count == 9)
            }
        }
    }
}
