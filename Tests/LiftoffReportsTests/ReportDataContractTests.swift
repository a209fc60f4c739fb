import Foundation
import LiftoffProfile
import LiftoffTestSupport
import Testing

@testable import LiftoffReports

/// The HTML report's data has one contract, `Schemas/report-data-1.schema.json`: the renderer's
/// output validates against it, and the page's script reads exactly the fields it declares.
@Suite("Report data contract", .timeLimit(.minutes(5)))
struct ReportDataContractTests {
    static let schemaPath = repositoryRoot.appendingPathComponent("Schemas/report-data-1.schema.json").path

    /// A launch with every optional part of the data: waits, hangs, a watchdog's end, a
    /// background task, a span with attributes and Swift task figures, several processes, async
    /// and inlined frames.
    static func everything() -> Profile {
        var profile = launchProfile()
        profile.samples.state[4] = .blocked
        profile.samples.state[5] = .runnable
        profile.samples.weight[5] = 3
        profile.frames[1].isAsync = true
        profile.frames[3].isInlined = true
        profile.threads[0].processID = 10
        profile.threads[1].processID = 11
        profile.processes = [
            Profile.ProcessRecord(id: 10, parentID: 1, commandLine: ["/usr/bin/app"], startNs: 0, endNs: 6_000_000),
            Profile.ProcessRecord(id: 11, parentID: 10, commandLine: ["/usr/bin/helper", "--x"], startNs: 900_000, endNs: 3_000_000),
        ]
        profile.spans.append(
            Profile.Span(
                name: "load", category: "span", threadID: 1, startNs: 700_000, endNs: 1_900_000, cpuNs: 900_000,
                samples: 1, waitingSamples: 0, attributes: ["file": "a.json", "bytes": "12"]))
        profile.spans[1].childTasks = 2
        profile.spans[1].scheduledNs = 40_000
        profile.spans.append(
            Profile.Span(name: "sync", category: "backgroundTask", threadID: 2, startNs: 4_000_000, endNs: 5_500_000, cpuNs: 1_000_000))
        profile.hangs = [Profile.HangRecord(startNs: 3_000_000, durationNs: 900_000, running: "draw", stacks: [3, 3])]
        profile.termination = Profile.Termination(reason: "launch took too long", phase: "launch", timeNs: 5_900_000, stack: 3)
        profile.tasks[0].error = "the file was missing"
        return profile
    }

    @Test("every report the renderer writes validates against the schema", arguments: [
        "everything", "launch", "hostile names", "empty", "tiny",
    ])
    func rendererFollowsTheSchema(_ name: String) throws {
        let profile: Profile
        switch name {
        case "everything": profile = Self.everything()
        case "launch": profile = launchProfile()
        case "hostile names": profile = hostileProfile()
        case "empty": profile = emptyProfile()
        default: profile = tinyProfile()
        }
        let data = HTMLReportRenderer().dataJSON(profile)
        let check = try JSONSchemaCheck.validate(data, schema: Self.schemaPath)
        #expect(check.status == 0, "\(name): \(check.output)")
    }

    @Test("the schema refuses a field it does not declare, so the renderer cannot add one unnoticed")
    func schemaIsClosed() throws {
        var object = try #require(
            JSONSerialization.jsonObject(with: Data(HTMLReportRenderer().dataJSON(tinyProfile()).utf8)) as? [String: Any])
        object["undeclared"] = 1
        let text = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        #expect(try JSONSchemaCheck.validate(text, schema: Self.schemaPath).status != 0)
    }

    @Test("the page's script reads every top-level field the schema declares, and only those")
    func scriptReadsTheContract() throws {
        let schema = try #require(
            JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Self.schemaPath))) as? [String: Any])
        let declared = Set(try #require(schema["properties"] as? [String: Any]).keys)
        // `normalise(d)` reads the data as `d.FIELD`; nothing else in the script sees the raw data.
        let script = HTMLReportAssets.reportJS
        let start = try #require(script.range(of: "function normalise(d)"))
        let end = try #require(script.range(of: "\n  }\n", range: start.upperBound..<script.endIndex))
        let body = String(script[start.lowerBound..<end.upperBound])
        var read = Set<String>()
        let pattern = try NSRegularExpression(pattern: "\\bd\\.([A-Za-z]+)")
        for match in pattern.matches(in: body, range: NSRange(body.startIndex..., in: body)) {
            if let range = Range(match.range(at: 1), in: body) { read.insert(String(body[range])) }
        }
        #expect(read.subtracting(declared).isEmpty, "read but not declared: \(read.subtracting(declared).sorted())")
        #expect(declared.subtracting(read).isEmpty, "declared but never read: \(declared.subtracting(read).sorted())")
    }

    @Test("every field a record of the schema declares is read somewhere in the page's script")
    func nestedFieldsAreRead() throws {
        let schema = try #require(
            JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Self.schemaPath))) as? [String: Any])
        var fields = Set<String>()
        func collect(_ value: Any, top: Bool) {
            if let object = value as? [String: Any] {
                if !top, let properties = object["properties"] as? [String: Any] { fields.formUnion(properties.keys) }
                for child in object.values { collect(child, top: false) }
            } else if let array = value as? [Any] {
                for child in array { collect(child, top: false) }
            }
        }
        collect(schema, top: true)
        let script = HTMLReportAssets.reportJS
        let unread = fields.filter { !script.contains(".\($0)") && !script.contains("'\($0)'") }
        #expect(unread.isEmpty, "declared but never read by the page: \(unread.sorted())")
    }
}
