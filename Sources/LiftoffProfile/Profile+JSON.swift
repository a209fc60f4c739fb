import Foundation

extension Profile {
    /// Encodes the profile as `profile.json` text (keys sorted, so equal profiles give equal bytes).
    public func jsonData(pretty: Bool = false) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = pretty ? [.sortedKeys, .prettyPrinted] : [.sortedKeys]
        return try encoder.encode(self)
    }

    /// Writes the profile to `url` atomically: readers see the old file or the whole new one.
    /// - Throws: ``ProfileError`` with code `unwritable`.
    public func write(to url: URL) throws {
        try AtomicFile.write(try jsonData(), to: url)
    }

    /// Reads and checks a `profile.json` file.
    /// - Throws: ``ProfileError``: `unreadable`, `truncated`, `malformed`, `wrongSchema` or `inconsistent`.
    public static func load(from url: URL) throws -> Profile {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            let reason = FileManager.default.fileExists(atPath: url.path) ? "cannot be read" : "does not exist"
            throw ProfileError(.unreadable, "The profile \(url.path) \(reason).", value: url.path)
        }
        return try decode(data, source: url.path)
    }

    /// Decodes and checks `profile.json` bytes; `source` names them in error messages.
    /// - Throws: ``ProfileError``: `truncated`, `malformed`, `wrongSchema` or `inconsistent`.
    public static func decode(_ data: Data, source: String = "profile") throws -> Profile {
        struct SchemaProbe: Decodable { var schema: String? }

        if data.isEmpty {
            throw ProfileError(.truncated, "\(source) is empty.", value: source)
        }
        // One parse when the file is right; what is wrong with it is found only when it is not.
        let decoder = JSONDecoder()
        var profile: Profile
        do {
            if let split = ProfileColumns.split(data), let rest = try? decoder.decode(Profile.self, from: split.rest) {
                profile = rest
                profile.samples = split.samples
                profile.stacks = split.stacks
            } else {
                profile = try decoder.decode(Profile.self, from: data)
            }
        } catch {
            if JSONShape.endsEarly(data) {
                throw ProfileError(.truncated, "\(source) is truncated: the JSON document ends early.", value: source)
            }
            guard let probe = try? decoder.decode(SchemaProbe.self, from: data) else {
                throw ProfileError(.malformed, "\(source) is not a JSON object.", value: source)
            }
            try checkSchema(probe.schema, source: source)
            if let error = error as? DecodingError {
                throw ProfileError(.malformed, "\(source) is malformed: \(describe(error)).", value: source)
            }
            throw ProfileError(.malformed, "\(source) is malformed.", value: source)
        }
        try checkSchema(profile.schema, source: source)
        try profile.validate(source: source)
        try profile.validateRanges(source: source)
        profile.shortenLongNames()
        profile.schema = currentSchema
        return profile
    }

    /// Refuses a file without a schema, or with one this Liftoff does not read.
    private static func checkSchema(_ schema: String?, source: String) throws {
        guard let schema else {
            throw ProfileError(
                .wrongSchema, "\(source) is not a Liftoff profile: it has no \"schema\" field.", value: source)
        }
        guard readableSchemas.contains(schema) else {
            var quoted = readableSchemas.map { "\"\($0)\"" }
            let last = quoted.popLast() ?? ""
            let readable = quoted.isEmpty ? last : quoted.joined(separator: ", ") + " and " + last
            throw ProfileError(
                .wrongSchema, "\(source) has schema \(String(reflecting: schema)), but this Liftoff reads \(readable).",
                value: schema)
        }
    }

    /// Checks that the tables agree with each other.
    /// - Throws: ``ProfileError`` with code `inconsistent`, naming the first contradiction.
    public func validate(source: String = "profile") throws {
        func fail(_ what: String) -> ProfileError {
            ProfileError(.inconsistent, "\(source) is inconsistent: \(what).", value: what)
        }
        guard stacks.parent.count == stacks.frame.count else {
            throw fail("stacks.parent and stacks.frame differ in length")
        }
        let sampleCount = samples.stack.count
        guard samples.thread.count == sampleCount, samples.timeNs.count == sampleCount,
            samples.state.count == sampleCount, samples.task.count == sampleCount, samples.cpuNs.count == sampleCount,
            samples.weight.count == sampleCount
        else {
            throw fail("the columns of samples differ in length")
        }
        for index in 0..<stacks.count {
            let parent = stacks.parent[index]
            guard parent >= -1, parent < index else {
                throw fail("stack \(index) has parent \(parent), which is not an earlier stack")
            }
            guard frames.indices.contains(stacks.frame[index]) else {
                throw fail("stack \(index) names frame \(stacks.frame[index]), which does not exist")
            }
        }
        for (index, violation) in violations.enumerated() {
            if let stack = violation.stack, !stacks.frame.indices.contains(stack) {
                throw fail("violation \(index) names stack \(stack), which does not exist")
            }
        }
        for (index, hang) in hangs.enumerated() {
            for stack in hang.stacks where !stacks.frame.indices.contains(stack) {
                throw fail("hang \(index) names stack \(stack), which does not exist")
            }
        }
        for (index, task) in asyncTasks.enumerated() {
            if let span = task.span, !spans.indices.contains(span) {
                throw fail("Swift task \(index) names span \(span), which does not exist")
            }
        }
        if let stack = termination?.stack, !stacks.frame.indices.contains(stack) {
            throw fail("termination names stack \(stack), which does not exist")
        }
        let threadIDs = Set(threads.map(\.id))
        for index in 0..<samples.count {
            guard stacks.frame.indices.contains(samples.stack[index]) else {
                throw fail("sample \(index) names stack \(samples.stack[index]), which does not exist")
            }
            guard threadIDs.contains(samples.thread[index]) else {
                throw fail("sample \(index) names thread \(samples.thread[index]), which is not in threads")
            }
        }
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
            return keys.isEmpty ? "the top level" : keys.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let parent = path(context)
            return "field \"\(key.stringValue)\" is missing" + (context.codingPath.isEmpty ? "" : " in \(parent)")
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "\(path(context)) has the wrong type"
        case .dataCorrupted(let context):
            return "\(path(context)) cannot be read"
        @unknown default:
            return "it cannot be decoded"
        }
    }
}

/// Cheap structural checks on JSON bytes.
enum JSONShape {
    /// Whether the bytes stop inside a string or with brackets still open: a cut-off file.
    static func endsEarly(_ data: Data) -> Bool {
        data.withUnsafeBytes { endsEarly($0) }
    }

    private static func endsEarly(_ data: UnsafeRawBufferPointer) -> Bool {
        var depth = 0
        var inString = false
        var escaped = false
        var sawValue = false
        for byte in data {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true; sawValue = true
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1; sawValue = true
            case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
            default: break
            }
        }
        return sawValue && (inString || depth > 0)
    }
}
