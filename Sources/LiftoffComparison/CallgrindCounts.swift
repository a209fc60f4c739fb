import Foundation

/// The instructions one launch executed, as valgrind's callgrind counted them: in all, and per
/// function, its self cost (the instructions of its own code) and its inclusive cost (with the
/// functions it called). Read from callgrind's output files (format version 1), one per dump, summed up to
/// the part whose trigger says the launch was ready (`dump ready`, or leaving
/// `lo_launch_ready`), or over every part (to the exit).
public struct CallgrindCounts: Sendable, Equatable {
    /// One function's instructions.
    public struct Function: Sendable, Equatable {
        /// Its name as callgrind wrote it (C++ demangled, Swift mangled).
        public var name: String
        /// Its object's path.
        public var object: String
        /// Its source file, when the debug information said (`???` otherwise).
        public var file: String?
        /// Instructions in its own code.
        public var instructions: UInt64
        /// Instructions in its own code and in the functions it called (its calls to itself
        /// counted once), at most the launch's.
        public var inclusiveInstructions: UInt64
    }

    /// Instructions executed from the start to the ready point (or the exit).
    public var instructions: UInt64
    /// Every function with instructions, the most first.
    public var functions: [Function]
    /// What ended the counting: the trigger of the last part counted (`Program termination`,
    /// `dump ready`).
    public var trigger: String
    /// The program counted: the first word of callgrind's `cmd:` line.
    public var program: String?

    /// Bigger files are refused: a launch's profile is a few megabytes.
    public static let maximumBytes = 512 << 20

    /// A failure to read callgrind's output, as one sentence.
    public struct ReadError: Error, CustomStringConvertible, Sendable, Equatable {
        /// The sentence.
        public var description: String
    }

    /// One part (one dump) of a callgrind output.
    struct Part {
        var number: Int
        var trigger: String
        var program: String?
        var total: UInt64
        var functions: [Key: Cost]
    }

    /// A function's costs within a part, or summed over parts.
    struct Cost {
        var file: String?
        var instructions: UInt64
        var inclusive: UInt64

        /// `self` and `other` summed, saturating.
        func adding(_ other: Cost) -> Cost {
            Cost(
                file: file ?? other.file, instructions: Parser.adding(instructions, other.instructions),
                inclusive: Parser.adding(inclusive, other.inclusive))
        }
    }

    struct Key: Hashable {
        var name: String
        var object: String
    }

    /// The callgrind output at `file` and its numbered dumps (`file.1`, `file.2`, …), as
    /// callgrind writes them beside it.
    public static func parts(of file: URL) -> [URL] {
        let folder = file.deletingLastPathComponent()
        let name = file.lastPathComponent
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0 == name || $0.hasPrefix(name + ".") && Int($0.dropFirst(name.count + 1)) != nil }
            .sorted().map { folder.appendingPathComponent($0) }
    }

    /// Reads the parts in `files` (a callgrind output file and its numbered dumps) and sums
    /// them in part order up to and including the first whose trigger contains `readyTrigger`,
    /// or all of them when none does.
    /// - Throws: `ReadError` naming the file that is missing, too large or not callgrind's.
    public static func read(files: [URL], readyTrigger: String = "ready") throws -> CallgrindCounts {
        var parts: [Part] = []
        for file in files {
            let attributes = try? FileManager.default.attributesOfItem(atPath: file.path)
            if let size = attributes?[.size] as? Int, size > maximumBytes {
                throw ReadError(description: "\(file.path) is \(size >> 20) MB, more than the \(maximumBytes >> 20) MB a launch's counts can be.")
            }
            guard let data = FileManager.default.contents(atPath: file.path) else {
                throw ReadError(description: "Cannot read \(file.path).")
            }
            do {
                parts.append(try parse(data))
            } catch let error as ReadError {
                throw ReadError(description: "\(file.path): \(error.description)")
            }
        }
        guard !parts.isEmpty else { throw ReadError(description: "No callgrind output to read.") }
        parts.sort { $0.number < $1.number }
        if let ready = parts.firstIndex(where: { $0.trigger.contains(readyTrigger) }) { parts = Array(parts[...ready]) }
        var total: UInt64 = 0
        var functions: [Key: Cost] = [:]
        for part in parts {
            total = Parser.adding(total, part.total)
            for (key, value) in part.functions { functions[key] = functions[key].map { $0.adding(value) } ?? value }
        }
        return CallgrindCounts(
            instructions: total, functions: Self.list(functions, total: total), trigger: parts.last?.trigger ?? "",
            program: parts.first { $0.program != nil }?.program)
    }

    /// One callgrind output file's counts, read from its bytes (every part it holds counted).
    /// - Throws: `ReadError` when it is not callgrind's output.
    public static func read(data: Data) throws -> CallgrindCounts {
        guard data.count <= maximumBytes else {
            throw ReadError(description: "it is \(data.count >> 20) MB, more than the \(maximumBytes >> 20) MB a launch's counts can be.")
        }
        let part = try parse(data)
        return CallgrindCounts(
            instructions: part.total, functions: list(part.functions, total: part.total), trigger: part.trigger, program: part.program)
    }

    /// A table of functions as a list, the most instructions first; inclusive costs at most
    /// `total` (calls between functions that call each other count their instructions twice).
    static func list(_ table: [Key: Cost], total: UInt64) -> [Function] {
        table.map {
            Function(
                name: $0.key.name, object: $0.key.object, file: $0.value.file, instructions: $0.value.instructions,
                inclusiveInstructions: min(max($0.value.inclusive, $0.value.instructions), max(total, $0.value.instructions)))
        }
        .sorted { ($0.instructions, $1.name, $1.object) > ($1.instructions, $0.name, $0.object) }
    }

    /// One callgrind output file (one part): `events:`, `positions:`, the `ob=`/`fl=`/`fn=`
    /// context lines with their name compression (`(12) name` defines, `(12)` refers), cost
    /// lines, and `calls=` lines whose following cost line is the call's inclusive cost (the
    /// caller's inclusive cost, not its own).
    static func parse(_ data: Data) throws -> Part {
        try data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws -> Part in
            var parser = Parser(bytes: raw.bindMemory(to: UInt8.self))
            return try parser.parse()
        }
    }

    /// Reads one part byte by byte: cost lines, which are nearly all of a file, are parsed in
    /// place and added to the current function's running sum; names are made only on `fn=`,
    /// `fl=` and `ob=` lines.
    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var part = Part(number: 0, trigger: "", program: nil, total: 0, functions: [:])
        var positions = 1
        var event = 0
        var sawHeader = false
        var objectNames: [Int: String] = [:]
        var fileNames: [Int: String] = [:]
        var functionNames: [Int: String] = [:]
        var object = "???"
        var file: String?
        var function: String?
        var functionFile: String?
        var functionCost: UInt64 = 0
        /// The current function's calls' inclusive costs, but for calls to itself.
        var callsCost: UInt64 = 0
        /// The function the next `calls=` line calls (`cfn=`) and its object (`cob=`, else the caller's).
        var callee: String?
        var calleeObject: String?
        /// Whether the next cost line is a call's (after `calls=`), and whether that call is to the function itself.
        var nextCostIsCall = false
        var callIsRecursive = false
        var summed: UInt64 = 0
        var summary: UInt64?

        enum Kind { case object, file, function }

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        static func adding(_ a: UInt64, _ b: UInt64) -> UInt64 {
            let (sum, overflow) = a.addingReportingOverflow(b)
            return overflow ? .max : sum
        }

        /// Adds the current function's sum to the part's table.
        mutating func flush() {
            defer {
                functionCost = 0
                callsCost = 0
            }
            guard let function, functionCost > 0 || callsCost > 0 else { return }
            let key = Key(name: function, object: object)
            let cost = Cost(file: functionFile, instructions: functionCost, inclusive: Self.adding(functionCost, callsCost))
            part.functions[key] = part.functions[key].map { $0.adding(cost) } ?? cost
        }

        /// `(id) name` defines id; `(id)` alone refers to it; anything else is the name itself.
        mutating func resolve(_ kind: Kind, _ value: Substring) -> String {
            guard value.hasPrefix("("), let close = value.firstIndex(of: ")") else { return String(value) }
            let idText = value[value.index(after: value.startIndex)..<close]
            let rest = value[value.index(after: close)...].drop { $0 == " " }
            guard let id = Int(idText) else { return String(rest.isEmpty ? value : rest) }
            if rest.isEmpty {
                let known: String?
                switch kind {
                case .object: known = objectNames[id]
                case .file: known = fileNames[id]
                case .function: known = functionNames[id]
                }
                return known ?? "(\(id))"
            }
            let name = String(rest)
            switch kind {
            case .object: objectNames[id] = name
            case .file: fileNames[id] = name
            case .function: functionNames[id] = name
            }
            return name
        }

        /// The Ir column of a cost line at `start..<end`: the field after the positions.
        func cost(_ start: Int, _ end: Int) -> UInt64 {
            var index = start
            var field = 0
            let wanted = positions + event
            while index < end {
                while index < end, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
                guard index < end else { return 0 }
                if field == wanted {
                    var value: UInt64 = 0
                    while index < end, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                        let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
                        let (plus, overflow2) = times.addingReportingOverflow(UInt64(bytes[index] - 0x30))
                        if overflow1 || overflow2 { return .max }
                        value = plus
                        index += 1
                    }
                    // A field that is not a plain number (a malformed line) counts as nothing.
                    return index == end || bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0d ? value : 0
                }
                while index < end, bytes[index] != 0x20, bytes[index] != 0x09 { index += 1 }
                field += 1
            }
            return 0
        }

        mutating func parse() throws -> Part {
            var start = 0
            var lineNumber = 0
            let count = bytes.count
            while start < count {
                var end = start
                while end < count, bytes[end] != 0x0a { end += 1 }
                lineNumber += 1
                defer { start = end + 1 }
                guard end > start else { continue }
                let first = bytes[start]
                if first == 0x23 { continue }  // #
                if (first >= 0x30 && first <= 0x39) || first == 0x2b || first == 0x2d || first == 0x2a {  // digit + - *
                    guard sawHeader else {
                        throw ReadError(description: "line \(lineNumber) is a cost before any header; this is not callgrind's output.")
                    }
                    let value = cost(start, end)
                    if nextCostIsCall {
                        // A call's inclusive cost: the caller's inclusive, not its own.
                        nextCostIsCall = false
                        if function != nil, !callIsRecursive { callsCost = Self.adding(callsCost, value) }
                        continue
                    }
                    guard function != nil else { continue }
                    functionCost = Self.adding(functionCost, value)
                    summed = Self.adding(summed, value)
                    continue
                }
                guard let line = String(bytes: UnsafeBufferPointer(rebasing: bytes[start..<end]), encoding: .utf8) else {
                    throw ReadError(description: "line \(lineNumber) is not text.")
                }
                try specification(Substring(line))
            }
            flush()
            guard sawHeader else { throw ReadError(description: "it has no callgrind header; this is not callgrind's output.") }
            part.total = summary ?? summed
            return part
        }

        /// A header line (`key: value`) or a context line (`fn=…`).
        mutating func specification(_ line: Substring) throws {
            if let equals = line.firstIndex(of: "=" as Character), line[..<equals].firstIndex(of: ":" as Character) == nil {
                let key = line[..<equals]
                let value = line[line.index(after: equals)...]
                switch key {
                case "ob":
                    flush()
                    object = resolve(.object, value)
                case "fl":
                    let name = resolve(.file, value)
                    file = name == "???" ? nil : name
                case "fi", "fe": _ = resolve(.file, value)
                case "fn":
                    flush()
                    function = resolve(.function, value)
                    functionFile = file
                case "cob": calleeObject = resolve(.object, value)
                case "cfi", "cfl": _ = resolve(.file, value)
                case "cfn": callee = resolve(.function, value)
                case "calls":
                    nextCostIsCall = true
                    callIsRecursive = callee == function && (calleeObject ?? object) == object
                    callee = nil
                    calleeObject = nil
                default: break
                }
                return
            }
            guard let colon = line.firstIndex(of: ":" as Character) else { return }
            let key = line[..<colon]
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            switch key {
            case "version", "creator", "pid":
                sawHeader = true
            case "cmd":
                sawHeader = true
                part.program = value.split(separator: " ").first.map(String.init)
            case "part":
                part.number = Int(value) ?? 0
            case "positions":
                positions = max(1, value.split(separator: " ").count)
            case "events":
                sawHeader = true
                event = value.split(separator: " ").firstIndex(of: "Ir") ?? 0
            case "summary", "totals":
                let fields = value.split(separator: " ")
                if event < fields.count, let number = UInt64(fields[event]) { summary = max(summary ?? 0, number) }
            case "desc":
                if value.hasPrefix("Trigger:") {
                    part.trigger = value.dropFirst("Trigger:".count).trimmingCharacters(in: .whitespaces)
                }
            default:
                break
            }
        }
    }
}
