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
}
