import Foundation
import LiftoffProfile
import LiftoffTestSupport
import Testing

/// `profile.json` checked against its published JSON Schema (`Schemas/profile-N.schema.json`)
/// by Python's `jsonschema`, a reader that shares no code with Liftoff.
@Suite("profile.json against its JSON Schema", .timeLimit(.minutes(5)))
struct ProfileSchemaTests {
    static let validator = repositoryRoot.appendingPathComponent("scripts/validate_profile.py").path

    /// Runs `scripts/validate_profile.py` on `files`: one line per file and status 0 when all are valid.
    static func validate(_ files: [URL]) throws -> (status: Int32, output: String) {
        try runToEnd("/usr/bin/env", ["python3", validator] + files.map(\.path))
    }

    /// Writes each profile to a file of its own in a new folder.
    static func write(_ profiles: [Profile]) throws -> [URL] {
        let folder = temporaryFolder()
        return try profiles.enumerated().map { index, profile in
            let url = folder.appendingPathComponent("profile-\(index).json")
            try profile.write(to: url)
            return url
        }
    }

    @Test("the demo's profiles, with tasks, violations and a hang, are valid liftoff.profile/3")
    func demoProfiles() throws {
        let folder = temporaryFolder()
        let result = try BuiltTool.find().run([
            "demo", "--out", folder.path, "--plan", "both", "--runs", "1", "--rate", "200", "--linger", "0",
            "--inject-hang", "600", "--quiet",
        ])
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let files = [folder.appendingPathComponent("profile.json"), folder.appendingPathComponent("naive/profile.json")]
        let profiles = try files.map { try Profile.load(from: $0) }
        #expect(profiles.contains { !$0.violations.isEmpty } && profiles.contains { !$0.hangs.isEmpty }, "optional sections are exercised")
        #expect(profiles.allSatisfy { !$0.tasks.isEmpty && !$0.spans.isEmpty })
        let check = try ProfileSchemaTests.validate(files)
        #expect(check.status == 0, "\(check.output)")
        #expect(check.output.components(separatedBy: "valid (liftoff.profile/3)").count - 1 == 2, "\(check.output)")
    }

    @Test("every kind of profile the tests build is valid: synthetic, hand-made, hostile, waiting, terminated")
    func builtProfiles() throws {
        var terminated = waitingBrowserProfile()
        terminated.termination = Profile.Termination(reason: "watchdog", phase: "launch", timeNs: 5_000_000, stack: 1)
        let folder = try runFolder([100, 120], extra: 10, violations: 2, occurrences: 3)
        let handMade = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
            .map { folder.appendingPathComponent($0) }
        let files = try ProfileSchemaTests.write([
            Profile.synthetic(samples: 2_000, distinctStacks: 200, tasks: 50),
            hostileBrowserProfile(), waitingBrowserProfile(), terminated,
        ]) + handMade
        let check = try ProfileSchemaTests.validate(files)
        #expect(check.status == 0, "\(check.output)")
    }

    @Test("a liftoff.profile/1 file is valid against its own schema only, and Liftoff still reads it")
    func versionOne() throws {
        let v1 = repositoryRoot.appendingPathComponent("Tests/Fixtures/profile-v1-demo.json")
        let own = try ProfileSchemaTests.validate([v1])
        #expect(own.status == 0 && own.output.contains("valid (liftoff.profile/1)"), "\(own.output)")
        let loaded = try Profile.load(from: v1)
        #expect(loaded.samples.count == 202)

        // The same document labelled /2 is still valid (every /2 addition is optional), but a /2
        // document labelled /1 is not: v1 has no state column.
        let upgraded = try ProfileSchemaTests.write([loaded])
        let current = try ProfileSchemaTests.validate(upgraded)
        #expect(current.status == 0, "Liftoff rewrites a v1 profile as a valid v2 one: \(current.output)")
        var document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: upgraded[0])) as? [String: Any])
        document["schema"] = "liftoff.profile/1"
        try JSONSerialization.data(withJSONObject: document).write(to: upgraded[0])
        let mislabelled = try ProfileSchemaTests.validate(upgraded)
        #expect(mislabelled.status == 1)
        #expect(mislabelled.output.contains("Additional properties are not allowed"), "\(mislabelled.output)")
    }

    /// Mutations of a valid profile, and what the validator says about each.
    static let mutations: [(name: String, edit: @Sendable (inout [String: Any]) -> Void, message: String)] = [
        ("a required field removed", { $0["counts"] = nil }, "$: 'counts' is a required property"),
        ("a negative time", {
            var samples = $0["samples"] as? [String: Any] ?? [:]
            samples["timeNs"] = [-5]
            $0["samples"] = samples
        }, "$.samples.timeNs[0]: -5 is less than the minimum of 0"),
        ("a row of no ticks", {
            var samples = $0["samples"] as? [String: Any] ?? [:]
            samples["weight"] = [0]
            $0["samples"] = samples
        }, "$.samples.weight[0]: 0 is less than the minimum of 1"),
        ("a string for a number", { $0["timeOriginNs"] = "soon" }, "$.timeOriginNs: 'soon' is not of type 'integer'"),
        ("an unknown field", { $0["extra"] = true }, "Additional properties are not allowed ('extra' was unexpected)"),
        ("an unknown version", { $0["schema"] = "liftoff.profile/9" }, "has schema \"liftoff.profile/9\", which is not one of the known schemas"),
    ]

    @Test("the schema refuses broken profiles and the validator names the field", arguments: mutations.indices)
    func refusals(_ index: Int) throws {
        let mutation = ProfileSchemaTests.mutations[index]
        let file = try ProfileSchemaTests.write([waitingBrowserProfile()])[0]
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: file), options: .mutableContainers)
        var document = try #require(object as? [String: Any])
        mutation.edit(&document)
        try JSONSerialization.data(withJSONObject: document).write(to: file)
        let check = try ProfileSchemaTests.validate([file])
        #expect(check.status == 1, "\(mutation.name): \(check.output)")
        #expect(check.output.contains(mutation.message), "\(mutation.name): \(check.output)")
    }

    @Test("the Reports article documents the schemas and the validator")
    func documented() throws {
        let article = try String(
            contentsOf: repositoryRoot.appendingPathComponent("Sources/Liftoff/Documentation.docc/Reports.md"), encoding: .utf8)
        for name in ["Schemas/profile-3.schema.json", "Schemas/profile-2.schema.json", "Schemas/profile-1.schema.json", "scripts/validate_profile.py"] {
            #expect(article.contains(name), "Reports.md does not mention \(name)")
        }
    }
}
