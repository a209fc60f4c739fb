import Foundation
import LiftoffProfile
import LiftoffTestSupport
import Testing

@testable import LiftoffReports

@Suite("speedscope", .timeLimit(.minutes(5)))
struct SpeedscopeRendererTests {
    @Test("a hand-made launch renders to exactly the expected speedscope file")
    func exactOutput() {
        let expected = #"""
            {"$schema":"https://www.speedscope.app/file-format-schema.json","name":"app","exporter":"liftoff 0.1.0","activeProfileIndex":0,"shared":{"frames":[{"name":"main","file":"app"},{"name":"launch","file":"app"},{"name":"parse","file":"/src/App/Parse.swift","line":12},{"name":"draw","file":"app"},{"name":"didFinishLaunching","file":"callback"},{"name":"read","file":"task"},{"name":"build views","file":"task"},{"name":"prefetch","file":"task"}]},"profiles":[{"type":"sampled","name":"main (1)","unit":"milliseconds","startValue":1,"endValue":5,"samples":[[0,1],[0,1],[0,3],[0,3]],"weights":[1,1,1,1]},{"type":"sampled","name":"worker (2)","unit":"milliseconds","startValue":1.5,"endValue":3.5,"samples":[[0,1,2],[0,1,2]],"weights":[1,1]},{"type":"evented","name":"tasks and spans: main (1)","unit":"milliseconds","startValue":0.6,"endValue":4.2,"events":[{"type":"O","frame":4,"at":0.6},{"type":"O","frame":6,"at":2.2},{"type":"C","frame":6,"at":3},{"type":"O","frame":7,"at":3},{"type":"C","frame":7,"at":4},{"type":"C","frame":4,"at":4.2}]},{"type":"evented","name":"tasks and spans: worker (2)","unit":"milliseconds","startValue":1,"endValue":2,"events":[{"type":"O","frame":5,"at":1},{"type":"C","frame":5,"at":2}]}]}
            """#
        #expect(SpeedscopeRenderer().render(launchProfile()) == expected + "\n")
    }

    @Test("output validates against speedscope's published schema", arguments: ["launch", "hostile", "empty"])
    func validatesAgainstSchema(fixture: String) throws {
        let profile = fixture == "launch" ? launchProfile() : fixture == "hostile" ? hostileProfile() : emptyProfile()
        let result = try SchemaCheck.validate(SpeedscopeRenderer().render(profile))
        #expect(result.status == 0, "jsonschema: \(result.output)")
    }

    @Test("waiting samples end in a [waiting] frame under the function they waited in, and still validate")
    func waitingFrame() throws {
        var profile = launchProfile()
        // main (1) samples [0,1], [0,1], [0,3], [0,3]: the two in draw wait.
        let draw = try #require(profile.frames.firstIndex { $0.name == "draw" })
        for sample in 0..<profile.samples.count where profile.stacks.frame[profile.samples.stack[sample]] == draw {
            profile.samples.state[sample] = .blocked
        }
        let text = SpeedscopeRenderer().render(profile)
        let document = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let frames = try #require((document["shared"] as? [String: Any])?["frames"] as? [[String: Any]])
        let waiting = try #require(frames.firstIndex { $0["name"] as? String == "[waiting]" })
        let profiles = try #require(document["profiles"] as? [[String: Any]])
        let main = try #require(profiles.first { $0["name"] as? String == "main (1)" })
        let samples = try #require(main["samples"] as? [[Int]])
        #expect(samples == [[0, 1], [0, 1], [0, 3, waiting], [0, 3, waiting]])
        let result = try SchemaCheck.validate(text)
        #expect(result.status == 0, "jsonschema: \(result.output)")
        #expect(!SpeedscopeRenderer().render(launchProfile()).contains("[waiting]"), "no wait, no extra frame")
    }

    @Test("evented profiles open and close frames in nested order with non-decreasing times")
    func eventsNest() throws {
        var profile = launchProfile()
        // A span that outlives its enclosing callback is cut at the callback's end.
        profile.spans.append(
            Profile.Span(name: "late", category: "span", threadID: 1, startNs: 4_000_000, endNs: 5_000_000))
        let document = try JSONSerialization.jsonObject(with: Data(SpeedscopeRenderer().render(profile).utf8))
        let profiles = try #require((document as? [String: Any])?["profiles"] as? [[String: Any]])
        let evented = profiles.filter { $0["type"] as? String == "evented" }
        #expect(evented.count == 2)
        for profile in evented {
            var open: [Int] = []
            var last = -Double.infinity
            for event in try #require(profile["events"] as? [[String: Any]]) {
                let at = try #require(event["at"] as? Double)
                let frame = try #require(event["frame"] as? Int)
                #expect(at >= last)
                last = at
                if event["type"] as? String == "O" { open.append(frame) } else { #expect(open.popLast() == frame) }
            }
            #expect(open.isEmpty)
        }
    }

    @Test("hostile names travel as JSON strings, unchanged")
    func hostileNamesUnchanged() throws {
        let document = try JSONSerialization.jsonObject(with: Data(SpeedscopeRenderer().render(hostileProfile()).utf8))
        let shared = try #require((document as? [String: Any])?["shared"] as? [String: Any])
        let frames = try #require(shared["frames"] as? [[String: Any]])
        let names = frames.compactMap { $0["name"] as? String }
        #expect(names == hostileNames)
    }
}

/// Runs Python's jsonschema against speedscope's schema in Tests/Schemas (or the copy named by
/// LIFTOFF_SPEEDSCOPE_SCHEMA).
enum SchemaCheck {
    static var schemaPath: String {
        if let path = ProcessInfo.processInfo.environment["LIFTOFF_SPEEDSCOPE_SCHEMA"] { return path }
        return repositoryRoot.appendingPathComponent("Tests/Schemas/speedscope-file-format-schema.json").path
    }

    static func validate(_ document: String) throws -> (status: Int32, output: String) {
        try JSONSchemaCheck.validate(document, schema: schemaPath)
    }
}
