import Foundation

/// Runs `executable` with `arguments` to its end; returns its exit status and its standard
/// output and error, interleaved as it wrote them.
public func runToEnd(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: output, as: UTF8.self))
}

/// The repository's root folder, found from this file's place in it.
public let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// Checks JSON files against a JSON Schema with Python's `jsonschema` (draft 2020-12 and
/// earlier, as the schema's `$schema` says), the reference validator `make test` installs.
public enum JSONSchemaCheck {
    /// Validates the JSON document in `file` against the schema in `schema`; a non-zero status
    /// comes with the validator's message.
    public static func validate(file: String, schema: String) throws -> (status: Int32, output: String) {
        try runToEnd("/usr/bin/env", [
            "python3", "-c",
            """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[2]))
            jsonschema.validators.validator_for(schema).check_schema(schema)
            jsonschema.validate(json.load(open(sys.argv[1])), schema)
            """,
            file, schema,
        ])
    }

    /// Validates `document` (JSON text) against the schema in `schema`.
    public static func validate(_ document: String, schema: String) throws -> (status: Int32, output: String) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("schema-check-\(UUID().uuidString).json")
        try document.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        return try validate(file: file.path, schema: schema)
    }
}
