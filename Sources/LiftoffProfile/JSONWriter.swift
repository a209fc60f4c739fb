/// Writes JSON text into a byte buffer, fast enough for profiles with millions of samples.
///
/// Callers write the punctuation between members; the writer takes care of escaping
/// strings and printing numbers. With `htmlSafe`, `<`, `>`, `&`, U+2028 and U+2029 in
/// strings are written as `\u` escapes, so the text can sit inside an HTML `<script>`
/// element without ending it.
///
/// Liftoff writes JSON two ways, each for a reason: `profile.json` goes through `Codable`
/// (`JSONEncoder`), so the one set of types that decodes a profile also defines what is written;
/// every other output (`record.json` and its journal, reports, speedscope, Chrome traces,
/// `simulate`'s lines) goes through this writer, which streams large documents several times
/// faster, lays them out as their readers need (one journal line per run) and can make them
/// HTML-safe.
package struct JSONWriter {
    /// The UTF-8 text written so far.
    package private(set) var bytes: [UInt8] = []
    /// Escape characters that matter to an HTML parser.
    package var htmlSafe = false

    package init(htmlSafe: Bool = false, capacity: Int = 4096) {
        self.htmlSafe = htmlSafe
        bytes.reserveCapacity(capacity)
    }

    /// The text written so far.
    package var text: String { String(decoding: bytes, as: UTF8.self) }

    /// Appends text that is already JSON (punctuation, literals).
    package mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Appends bytes that are already JSON.
    package mutating func raw(bytes other: [UInt8]) {
        bytes.append(contentsOf: other)
    }

    /// Appends `"name":`.
    package mutating func key(_ name: StaticString) {
        bytes.append(UInt8(ascii: "\""))
        raw(name)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    /// Appends `"name":` for a key chosen at run time.
    package mutating func key(_ name: String) {
        string(name)
        bytes.append(UInt8(ascii: ":"))
    }

    /// Appends `,"name":`.
    package mutating func nextKey(_ name: StaticString) {
        bytes.append(UInt8(ascii: ","))
        key(name)
    }

    /// Appends a JSON string literal.
    package mutating func string(_ value: String) {
        let start = bytes.count
        var sawLeadByte = false
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): append("\\\"")
            case UInt8(ascii: "\\"): append("\\\\")
            case UInt8(ascii: "\n"): append("\\n")
            case UInt8(ascii: "\r"): append("\\r")
            case UInt8(ascii: "\t"): append("\\t")
            case UInt8(ascii: "<") where htmlSafe: append("\\u003c")
            case UInt8(ascii: ">") where htmlSafe: append("\\u003e")
            case UInt8(ascii: "&") where htmlSafe: append("\\u0026")
            case 0..<0x20:
                append("\\u00")
                bytes.append(JSONWriter.hexDigits[Int(byte >> 4)])
                bytes.append(JSONWriter.hexDigits[Int(byte & 0xF)])
            default:
                if byte == 0xE2 { sawLeadByte = true }
                bytes.append(byte)
            }
        }
        if htmlSafe && sawLeadByte { escapeLineSeparators(from: start) }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends a string or `null`.
    package mutating func string(_ value: String?) {
        if let value { string(value) } else { raw("null") }
    }

    /// Appends an integer.
    package mutating func int(_ value: Int) {
        if value < 0 {
            bytes.append(UInt8(ascii: "-"))
            unsigned(UInt64(value.magnitude))
        } else {
            unsigned(UInt64(value))
        }
    }

    /// Appends an unsigned integer.
    package mutating func unsigned(_ value: UInt64) {
        if value < 10 {
            bytes.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { buffer in
            while rest > 0 {
                buffer[count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            }
            for index in stride(from: count - 1, through: 0, by: -1) { bytes.append(buffer[index]) }
        }
    }

    /// Appends a number with at most `digits` decimals and no trailing zeros; `null` when not finite.
    package mutating func number(_ value: Double, digits: Int = 3) {
        guard value.isFinite else {
            raw("null")
            return
        }
        var scale: Double = 1
        for _ in 0..<digits { scale *= 10 }
        let scaled = (value.magnitude * scale).rounded()
        guard scaled < 9.0e18 else {
            append(String(value))
            return
        }
        let fixed = UInt64(scaled)
        let divisor = UInt64(scale)
        if value < 0 && fixed > 0 { bytes.append(UInt8(ascii: "-")) }
        unsigned(fixed / divisor)
        var fraction = fixed % divisor
        guard fraction > 0 else { return }
        var width = digits
        while fraction % 10 == 0 {
            fraction /= 10
            width -= 1
        }
        bytes.append(UInt8(ascii: "."))
        var power: UInt64 = 1
        for _ in 1..<max(width, 1) { power *= 10 }
        while power > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(fraction / power % 10))
            power /= 10
        }
    }

    /// Appends a number or `null`.
    package mutating func number(_ value: Double?, digits: Int = 3) {
        if let value { number(value, digits: digits) } else { raw("null") }
    }

    /// Appends `true` or `false`.
    package mutating func bool(_ value: Bool) {
        if value { raw("true") } else { raw("false") }
    }

    /// Appends `,"name":"value"`.
    package mutating func field(_ name: StaticString, _ value: String?) {
        nextKey(name)
        string(value)
    }

    /// Appends `,"name":value`.
    package mutating func field(_ name: StaticString, _ value: Int) {
        nextKey(name)
        int(value)
    }

    /// Appends `,"name":value` with at most `digits` decimals (`null` when nil or not finite).
    package mutating func field(_ name: StaticString, _ value: Double?, digits: Int = 3) {
        nextKey(name)
        number(value, digits: digits)
    }

    /// Appends `,"name":true` or `false`.
    package mutating func field(_ name: StaticString, _ value: Bool) {
        nextKey(name)
        bool(value)
    }

    /// Appends `[a,b,c]` for integers.
    package mutating func intArray<C: Collection>(_ values: C) where C.Element == Int {
        bytes.append(UInt8(ascii: "["))
        var first = true
        for value in values {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            int(value)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// Appends `["a","b"]`.
    package mutating func stringArray<C: Collection>(_ values: C) where C.Element == String {
        bytes.append(UInt8(ascii: "["))
        var first = true
        for value in values {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            string(value)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// Appends `[{…},{…}]`: one object per element, whose members `write` adds (the first with
    /// `key`, the rest with `field` or `nextKey`).
    package mutating func objectArray<C: Collection>(_ values: C, _ write: (inout JSONWriter, C.Element) -> Void) {
        bytes.append(UInt8(ascii: "["))
        var first = true
        for value in values {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            bytes.append(UInt8(ascii: "{"))
            write(&self, value)
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(UInt8(ascii: "]"))
    }

    private mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// U+2028 and U+2029 (E2 80 A8 / E2 80 A9) end a line in older JavaScript parsers:
    /// rewrites them as `\u2028` / `\u2029` in the string just written.
    private mutating func escapeLineSeparators(from start: Int) {
        var index = start
        while index + 2 < bytes.count {
            if bytes[index] == 0xE2, bytes[index + 1] == 0x80, bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9 {
                let last: UInt8 = bytes[index + 2] == 0xA8 ? UInt8(ascii: "8") : UInt8(ascii: "9")
                bytes.replaceSubrange(index..<(index + 3), with: Array("\\u202".utf8) + [last])
                index += 6
            } else {
                index += 1
            }
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}
