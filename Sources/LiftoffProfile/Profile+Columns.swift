import Foundation

/// The two large tables of a `profile.json` — its samples and its stacks, columns of integers —
/// read straight from the bytes. `JSONDecoder` spends about 250 ns on each number of such a
/// column (a launch's profile holds tens of thousands); this reader spends a few. The rest of the
/// document still goes through `JSONDecoder`, with the two tables left empty in it.
///
/// It reads only what Liftoff writes: a top-level object whose `samples` and `stacks` are
/// objects of arrays of integers (or `null` for an optional column). Anything else (another
/// member in a table, a fraction, an exponent, a number out of its column's range, a key given
/// twice) makes it give up, and `JSONDecoder` reads the whole document and says what is wrong.
enum ProfileColumns {
    /// The document with both tables emptied, and the tables; nil when the bytes are not as
    /// Liftoff writes them.
    static func split(_ data: Data) -> (rest: Data, samples: Profile.SampleTable, stacks: Profile.StackTable)? {
        data.withUnsafeBytes { raw -> (Data, Profile.SampleTable, Profile.StackTable)? in
            guard let base = raw.bindMemory(to: UInt8.self).baseAddress, !raw.isEmpty else { return nil }
            var reader = Reader(bytes: UnsafeBufferPointer(start: base, count: raw.count))
            guard let found = reader.topLevel() else { return nil }
            var rest = Data(capacity: raw.count - (found.samples.range.count + found.stacks.range.count) + 64)
            let parts = [found.samples, found.stacks].sorted { $0.range.lowerBound < $1.range.lowerBound }
            var position = 0
            for part in parts {
                rest.append(base + position, count: part.range.lowerBound - position)
                rest.append(contentsOf: part.empty.utf8)
                position = part.range.upperBound
            }
            rest.append(base + position, count: raw.count - position)
            return (rest, found.samplesTable, found.stacksTable)
        }
    }

    /// A table's place in the document and what stands in for it.
    struct Part {
        var range: Range<Int>
        var empty: String
    }

    struct Found {
        var samples: Part
        var stacks: Part
        var samplesTable: Profile.SampleTable
        var stacksTable: Profile.StackTable
    }

    /// A column as read: each number's magnitude, and where the few negative ones are (a root
    /// stack's parent, -1).
    struct Column {
        var magnitudes: [UInt64] = []
        var negatives: [Int] = []

        /// As `Int`s, or nil when one does not fit.
        func ints() -> [Int]? {
            var result = [Int]()
            result.reserveCapacity(magnitudes.count)
            var negativesLeft = negatives.makeIterator()
            var nextNegative = negativesLeft.next()
            for (index, magnitude) in magnitudes.enumerated() {
                if index == nextNegative {
                    guard magnitude <= UInt64(Int.max) + 1 else { return nil }
                    result.append(magnitude == UInt64(Int.max) + 1 ? .min : -Int(magnitude))
                    nextNegative = negativesLeft.next()
                } else {
                    guard magnitude <= UInt64(Int.max) else { return nil }
                    result.append(Int(magnitude))
                }
            }
            return result
        }

        /// As unsigned numbers of `T`, or nil when one is negative or does not fit.
        func unsigned<T: FixedWidthInteger & UnsignedInteger>(_: T.Type) -> [T]? {
            guard negatives.isEmpty, magnitudes.allSatisfy({ $0 <= UInt64(T.max) }) else { return nil }
            return magnitudes.map { T(truncatingIfNeeded: $0) }
        }
    }

    struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var at = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func skipSpace() {
            while at < bytes.count, bytes[at] == 0x20 || bytes[at] == 0x0A || bytes[at] == 0x0D || bytes[at] == 0x09 { at += 1 }
        }

        mutating func expect(_ byte: UInt8) -> Bool {
            skipSpace()
            guard at < bytes.count, bytes[at] == byte else { return false }
            at += 1
            return true
        }

        /// A string's bytes between its quotes; nil for one with escapes (no key Liftoff reads has any).
        mutating func plainString() -> ArraySlice<UInt8>? {
            guard expect(UInt8(ascii: "\"")) else { return nil }
            let start = at
            while at < bytes.count, bytes[at] != UInt8(ascii: "\"") {
                if bytes[at] == UInt8(ascii: "\\") { return nil }
                at += 1
            }
            guard at < bytes.count else { return nil }
            let text = Array(bytes[start..<at])[...]
            at += 1
            return text
        }

        /// Passes over any string, escapes included.
        mutating func skipString() -> Bool {
            guard expect(UInt8(ascii: "\"")) else { return false }
            while at < bytes.count {
                let byte = bytes[at]
                at += 1
                if byte == UInt8(ascii: "\\") {
                    at += 1
                } else if byte == UInt8(ascii: "\"") {
                    return true
                }
            }
            return false
        }

        /// Passes over any value: strings, nested objects and arrays, numbers and literals.
        mutating func skipValue() -> Bool {
            skipSpace()
            guard at < bytes.count else { return false }
            switch bytes[at] {
            case UInt8(ascii: "\""):
                return skipString()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var depth = 0
                while at < bytes.count {
                    let byte = bytes[at]
                    if byte == UInt8(ascii: "\"") {
                        guard skipString() else { return false }
                        continue
                    }
                    at += 1
                    if byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") {
                        depth += 1
                    } else if byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") {
                        depth -= 1
                        if depth == 0 { return true }
                    }
                }
                return false
            default:
                let start = at
                while at < bytes.count, bytes[at] != UInt8(ascii: ","), bytes[at] != UInt8(ascii: "}"), bytes[at] != UInt8(ascii: "]"),
                    bytes[at] != 0x20, bytes[at] != 0x0A, bytes[at] != 0x0D, bytes[at] != 0x09
                {
                    at += 1
                }
                return at > start
            }
        }

        /// `[1,-2,3]`, or `null` (an absent column); nil for anything else.
        mutating func column() -> Column?? {
            skipSpace()
            if at + 4 <= bytes.count, bytes[at] == UInt8(ascii: "n"), bytes[at + 1] == UInt8(ascii: "u"),
                bytes[at + 2] == UInt8(ascii: "l"), bytes[at + 3] == UInt8(ascii: "l")
            {
                at += 4
                return .some(nil)
            }
            guard expect(UInt8(ascii: "[")) else { return nil }
            var column = Column()
            skipSpace()
            if at < bytes.count, bytes[at] == UInt8(ascii: "]") {
                at += 1
                return column
            }
            while true {
                skipSpace()
                guard at < bytes.count else { return nil }
                var negative = false
                if bytes[at] == UInt8(ascii: "-") {
                    negative = true
                    at += 1
                }
                let start = at
                var value: UInt64 = 0
                while at < bytes.count, bytes[at] >= 0x30, bytes[at] <= 0x39 {
                    let (times, overflowTimes) = value.multipliedReportingOverflow(by: 10)
                    let (sum, overflowSum) = times.addingReportingOverflow(UInt64(bytes[at] - 0x30))
                    guard !overflowTimes, !overflowSum else { return nil }
                    value = sum
                    at += 1
                }
                // Digits, and no leading zero but a lone 0 (as JSON says).
                guard at > start, bytes[start] != 0x30 || at - start == 1 else { return nil }
                if negative && value != 0 { column.negatives.append(column.magnitudes.count) }
                column.magnitudes.append(value)
                skipSpace()
                guard at < bytes.count else { return nil }
                if bytes[at] == UInt8(ascii: ",") {
                    at += 1
                } else if bytes[at] == UInt8(ascii: "]") {
                    at += 1
                    return column
                } else {
                    return nil
                }
            }
        }

        /// An object of columns, by name; nil when a name repeats or a value is not a column.
        mutating func table() -> [String: Column?]? {
            guard expect(UInt8(ascii: "{")) else { return nil }
            var columns: [String: Column?] = [:]
            if expect(UInt8(ascii: "}")) { return columns }
            while true {
                guard let key = plainString(), expect(UInt8(ascii: ":")), let column = column() else { return nil }
                let name = String(decoding: key, as: UTF8.self)
                guard columns[name] == nil else { return nil }
                columns[name] = column
                if expect(UInt8(ascii: ",")) { continue }
                return expect(UInt8(ascii: "}")) ? columns : nil
            }
        }

        mutating func topLevel() -> Found? {
            guard expect(UInt8(ascii: "{")) else { return nil }
            var samples: (Part, Profile.SampleTable)?
            var stacks: (Part, Profile.StackTable)?
            while true {
                guard let key = plainString() else { return nil }
                guard expect(UInt8(ascii: ":")) else { return nil }
                skipSpace()
                let valueStart = at
                if key.elementsEqual("samples".utf8) {
                    guard samples == nil, let columns = table(), let table = Self.samples(columns) else { return nil }
                    samples = (Part(range: valueStart..<at, empty: #"{"thread":[],"timeNs":[],"stack":[]}"#), table)
                } else if key.elementsEqual("stacks".utf8) {
                    guard stacks == nil, let columns = table(), let table = Self.stacks(columns) else { return nil }
                    stacks = (Part(range: valueStart..<at, empty: #"{"parent":[],"frame":[]}"#), table)
                } else {
                    guard skipValue() else { return nil }
                }
                if expect(UInt8(ascii: ",")) { continue }
                guard expect(UInt8(ascii: "}")) else { return nil }
                skipSpace()
                guard at == bytes.count, let samples, let stacks else { return nil }
                return Found(samples: samples.0, stacks: stacks.0, samplesTable: samples.1, stacksTable: stacks.1)
            }
        }

        static func samples(_ columns: [String: Column?]) -> Profile.SampleTable? {
            let known: Set<String> = ["thread", "timeNs", "stack", "state", "task", "cpuNs", "weight"]
            guard columns.keys.allSatisfy(known.contains),
                let thread = columns["thread"].flatMap({ $0 })?.ints(),
                let time = columns["timeNs"].flatMap({ $0 })?.unsigned(UInt64.self),
                let stack = columns["stack"].flatMap({ $0 })?.ints()
            else { return nil }
            var state: [Profile.SampleState]?
            if let column = columns["state"].flatMap({ $0 }) {
                guard let raw = column.unsigned(UInt8.self) else { return nil }
                var states = [Profile.SampleState]()
                states.reserveCapacity(raw.count)
                for value in raw {
                    guard let decoded = Profile.SampleState(rawValue: value) else { return nil }
                    states.append(decoded)
                }
                state = states
            }
            func optional<T: FixedWidthInteger & UnsignedInteger>(_ name: String, _ type: T.Type) -> [T]?? {
                guard let column = columns[name].flatMap({ $0 }) else { return .some(nil) }
                guard let values = column.unsigned(type) else { return nil }
                return .some(values)
            }
            guard let task = optional("task", UInt64.self), let cpu = optional("cpuNs", UInt64.self),
                let weight = optional("weight", UInt32.self)
            else { return nil }
            return Profile.SampleTable(thread: thread, timeNs: time, stack: stack, state: state, task: task, cpuNs: cpu, weight: weight)
        }

        static func stacks(_ columns: [String: Column?]) -> Profile.StackTable? {
            guard columns.count == 2, let parent = columns["parent"].flatMap({ $0 })?.ints(),
                let frame = columns["frame"].flatMap({ $0 })?.ints()
            else { return nil }
            return Profile.StackTable(parent: parent, frame: frame)
        }
    }
}
