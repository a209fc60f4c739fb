import Foundation

extension CallgrindCounts {
    /// Reads one part byte by byte. Cost lines, which are nearly all of a file, are parsed in
    /// place and added to the current function's running sums; context lines (`fn=`, `cfn=`,
    /// `calls=`, …) are read as bytes too, each name a number while the part is read (a
    /// compressed name's id, or a number given to a plain name), so that a string is made once
    /// per name, where it is defined, and the table of functions is keyed by numbers.
    struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var part = Part(number: 0, trigger: "", program: nil, total: 0, functions: [:])
        var positions = 1
        var event = 0
        var sawHeader = false
        var lineNumber = 0
        var summed: UInt64 = 0
        var summary: UInt64?

        /// The kinds of names, each numbered on its own.
        enum Kind: Int { case object = 0, file, function }
        /// Each kind's names by number: a compressed name's id (0 or more), or the number a plain
        /// name was given (-2 and below); -1 is no name (`???`).
        var names: [[Int: String]] = [[:], [:], [:]]
        var plainNames: [[String: Int]] = [[:], [:], [:]]
        var nextPlain = -2

        var object = -1
        var file = -1
        var function: Int?
        var functionFile = -1
        var functionCost: UInt64 = 0
        /// The current function's calls' inclusive costs, but for calls to itself.
        var callsCost: UInt64 = 0
        /// The function the next `calls=` line calls (`cfn=`) and its object (`cob=`, else the caller's).
        var callee: Int?
        var calleeObject: Int?
        /// Whether the next cost line is a call's (after `calls=`), and whether that call is to the function itself.
        var nextCostIsCall = false
        var callIsRecursive = false

        struct Function: Hashable {
            var object: Int
            var function: Int
        }
        struct Costs {
            var file: Int
            var instructions: UInt64
            var inclusive: UInt64
        }
        var table: [Function: Costs] = [:]

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        static func adding(_ a: UInt64, _ b: UInt64) -> UInt64 {
            let (sum, overflow) = a.addingReportingOverflow(b)
            return overflow ? .max : sum
        }

        /// Adds the current function's sums to the part's table.
        mutating func flush() {
            defer {
                functionCost = 0
                callsCost = 0
            }
            guard let function, functionCost > 0 || callsCost > 0 else { return }
            let key = Function(object: object, function: function)
            let inclusive = Self.adding(functionCost, callsCost)
            if var known = table[key] {
                known.instructions = Self.adding(known.instructions, functionCost)
                known.inclusive = Self.adding(known.inclusive, inclusive)
                table[key] = known
            } else {
                table[key] = Costs(file: functionFile, instructions: functionCost, inclusive: inclusive)
            }
        }

        /// The bytes `start..<end` as text.
        func text(_ start: Int, _ end: Int) throws -> String {
            guard let text = String(bytes: UnsafeBufferPointer(rebasing: bytes[start..<end]), encoding: .utf8) else {
                throw ReadError(description: "line \(lineNumber) is not text.")
            }
            return text
        }

        /// The number of the name at `start..<end`: `(id) name` defines id, `(id)` alone refers
        /// to it, anything else is a plain name.
        mutating func name(_ kind: Kind, _ start: Int, _ end: Int) throws -> Int {
            if start < end, bytes[start] == 0x28 {  // (
                var id = 0
                var index = start + 1
                while index < end, bytes[index] >= 0x30, bytes[index] <= 0x39, id < 100_000_000_000 {
                    id = id * 10 + Int(bytes[index] - 0x30)
                    index += 1
                }
                if index > start + 1, index < end, bytes[index] == 0x29 {  // )
                    var rest = index + 1
                    while rest < end, bytes[rest] == 0x20 { rest += 1 }
                    if rest < end { names[kind.rawValue][id] = try text(rest, end) }
                    return id
                }
            }
            let plain = try text(start, end)
            if let known = plainNames[kind.rawValue][plain] { return known }
            let number = nextPlain
            nextPlain -= 1
            plainNames[kind.rawValue][plain] = number
            names[kind.rawValue][number] = plain
            return number
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
            let count = bytes.count
            while start < count {
                var end = count
                if let base = bytes.baseAddress, let newline = memchr(base + start, 0x0a, count - start) {
                    end = base.distance(to: newline.assumingMemoryBound(to: UInt8.self))
                }
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
                if try context(start, end) { continue }
                try specification(Substring(try text(start, end)))
            }
            flush()
            guard sawHeader else { throw ReadError(description: "it has no callgrind header; this is not callgrind's output.") }
            part.total = summary ?? summed
            part.functions = functions()
            return part
        }

        /// Whether the bytes at `start` spell `prefix`.
        func has(_ prefix: StaticString, at start: Int, _ end: Int) -> Bool {
            let length = prefix.utf8CodeUnitCount
            guard end - start >= length else { return false }
            let pointer = prefix.utf8Start
            for index in 0..<length where bytes[start + index] != pointer[index] { return false }
            return true
        }

        /// A context line (`ob=`, `fl=`, `fi=`, `fe=`, `fn=`, `cob=`, `cfi=`, `cfl=`, `cfn=`,
        /// `calls=`), read as bytes; false for any other line.
        mutating func context(_ start: Int, _ end: Int) throws -> Bool {
            switch bytes[start] {
            case 0x66:  // f
                if has("fn=", at: start, end) {
                    flush()
                    function = try name(.function, start + 3, end)
                    functionFile = file
                } else if has("fl=", at: start, end) {
                    file = try name(.file, start + 3, end)
                } else if has("fi=", at: start, end) || has("fe=", at: start, end) {
                    _ = try name(.file, start + 3, end)
                } else {
                    return false
                }
            case 0x6f:  // o
                guard has("ob=", at: start, end) else { return false }
                flush()
                object = try name(.object, start + 3, end)
            case 0x63:  // c
                if has("cfn=", at: start, end) {
                    callee = try name(.function, start + 4, end)
                } else if has("cob=", at: start, end) {
                    calleeObject = try name(.object, start + 4, end)
                } else if has("cfi=", at: start, end) || has("cfl=", at: start, end) {
                    _ = try name(.file, start + 4, end)
                } else if has("calls=", at: start, end) {
                    nextCostIsCall = true
                    callIsRecursive = callee != nil && callee == function && (calleeObject ?? object) == object
                    callee = nil
                    calleeObject = nil
                } else {
                    return false
                }
            default:
                return false
            }
            return true
        }

        /// The table of functions with their names.
        func functions() -> [Key: Cost] {
            var result: [Key: Cost] = [:]
            for (key, costs) in table {
                let objectName = key.object == -1 ? "???" : names[Kind.object.rawValue][key.object] ?? "(\(key.object))"
                let functionName = names[Kind.function.rawValue][key.function] ?? "(\(key.function))"
                let fileName = costs.file == -1 ? nil : names[Kind.file.rawValue][costs.file] ?? "(\(costs.file))"
                let cost = Cost(file: fileName == "???" ? nil : fileName, instructions: costs.instructions, inclusive: costs.inclusive)
                let name = Key(name: functionName, object: objectName)
                result[name] = result[name].map { $0.adding(cost) } ?? cost
            }
            return result
        }

        /// A header line (`key: value`), or another line with `=` (ignored).
        mutating func specification(_ line: Substring) throws {
            if let equals = line.firstIndex(of: "=" as Character), line[..<equals].firstIndex(of: ":" as Character) == nil { return }
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
