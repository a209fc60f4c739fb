import Foundation
import LiftoffProfile
import LiftoffTestSupport
import Testing

@testable import LiftoffReports

@Suite("Insight reports", .timeLimit(.minutes(5)))
struct InsightReportTests {
    @Test("text, Markdown and JSON say the same insight: id, finding, cost, threshold and place")
    func formats() throws {
        let report = InsightReport(launchWithSleep(ms: 40))
        let text = report.text()
        #expect(text.hasPrefix("Why the launch took 200 ms, the costliest first:\n1. [main-thread-sleep] "))
        #expect(text.contains("40 ms, 20 % of the launch; threshold 10 ms, at 50–90 ms on main (1)."))
        let markdown = report.markdown(report: "index.html").joined(separator: "\n")
        #expect(markdown.contains("([timeline](index.html#t=50.000-90.000))"))
        #expect(markdown.contains("Look at `load_config`."))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        let first = try #require((json["insights"] as? [[String: Any]])?.first)
        #expect(first["id"] as? String == "main-thread-sleep" && first["costMs"] as? Double == 40)
        #expect(first["thresholdMs"] as? Double == 10 && first["startMs"] as? Double == 50)
        #expect(InsightReport(launchWithSleep(ms: 0)).text().hasPrefix("No insight fired"))
    }

    @Test("explain lists the path's hops and says where it stops, in text, Markdown and JSON")
    func pathHopsAndStops() throws {
        var launch = LaunchBuilder()
        launch.endMs = 121
        launch.firstFrameMs = 121
        launch.threads.append(Profile.ThreadInfo(id: 2, name: "worker", isMain: false))
        let lock = ["libc.so.6|pthread_mutex_lock", "libc.so.6|__lll_lock_wait"]
        launch.add(thread: 1, .blocked, ["main", "load_settings"] + lock, fromMs: 1, toMs: 41)
        launch.add(thread: 2, .running, ["start", "warm_cache"], fromMs: 1, toMs: 41)
        launch.add(thread: 1, .running, ["main", "draw"], fromMs: 41, toMs: 61)
        launch.add(thread: 1, .blocked, ["main", "connect_db"] + lock, fromMs: 61, toMs: 121)
        let report = InsightReport(launch.profile())
        let text = report.text()
        #expect(text.contains("Path to ready: main (1) waited for worker (2) at 1–41 ms, which ran."), "\(text)")
        #expect(text.contains("The path stops at main (1), 61–121 ms: no thread in the samples held it."), "\(text)")
        #expect(report.markdown().joined(separator: "\n").contains("The path stops at main (1)"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        let path = try #require(json["path"] as? [String: Any])
        let hops = try #require(path["hops"] as? [[String: Any]])
        #expect(hops.count == 1 && hops[0]["holder"] as? String == "worker (2)" && hops[0]["holderRan"] as? Bool == true)
        let stops = try #require(path["stops"] as? [[String: Any]])
        #expect(stops.count == 1 && stops[0]["startMs"] as? Double == 61 && stops[0]["reason"] as? String == "no thread in the samples held it")
    }

    @Test("a comparison's text, Markdown and JSON list the insights that appeared in head")
    func comparison() throws {
        let base = RunSet(folder: URL(fileURLWithPath: "/base"), profiles: (0..<4).map { _ in launchWithSleep(ms: 0) })
        let head = RunSet(folder: URL(fileURLWithPath: "/head"), profiles: (0..<4).map { _ in launchWithSleep(ms: 40) })
        let comparison = try LaunchComparison(base: base, head: head)
        #expect(comparison.text().contains("main-thread-sleep: 0.000 ms → 40.0 ms median, appeared, in 4 of 4 head runs."))
        #expect(comparison.markdown().contains("### Insights that appeared or grew"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(comparison.json().utf8)) as? [String: Any])
        let insights = try #require(json["insights"] as? [[String: Any]])
        #expect(insights.first?["id"] as? String == "main-thread-sleep" && insights.first?["appeared"] as? Bool == true)
    }
}
