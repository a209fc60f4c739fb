import Foundation
import LiftoffProfile

/// The Swift compiler that built a program, read from the program's file: the compiler names itself
/// (`Swift version 6.3.1 (swift-6.3.1-RELEASE)`) as the producer of its debug information, the first
/// string of `.debug_str`. A launch history keys its series by it, so that a toolchain update starts a
/// series of its own instead of showing as a change point.
enum SwiftVersion {
    /// `6.3.1` for a program built by Swift 6.3.1; `unknown` when the file cannot be read, is not a
    /// 64-bit little-endian ELF file, or carries no debug strings naming a Swift compiler (a C program,
    /// a stripped binary).
    static func ofProgram(_ command: String, searchPath: String? = ProcessInfo.processInfo.environment["PATH"]) -> String {
        guard let path = ExecutableSearch.find(command, path: searchPath), let handle = FileHandle(forReadingAtPath: path) else {
            return unknown
        }
        defer { try? handle.close() }
        return (try? version(in: handle)) ?? unknown
    }

    /// What an entry says when the program does not name its compiler.
    static let unknown = "unknown"

    /// The most bytes of `.debug_str` searched: the producer is its first string (the first
    /// compilation unit's), so a megabyte leaves room for objects linked ahead of it.
    static let searchLimit = 1 << 20

    /// The version named in the file's `.debug_str`, or nil.
    static func version(in handle: FileHandle) throws -> String? {
        guard let header = try read(handle, at: 0, count: 64), header.count == 64,
            header.starts(with: [0x7f, 0x45, 0x4c, 0x46, 2, 1])  // ELF, 64-bit, little-endian
        else { return nil }
        let sectionTable = header.integer(at: 0x28, size: 8)
        let entrySize = header.integer(at: 0x3a, size: 2)
        let count = header.integer(at: 0x3c, size: 2)
        let namesIndex = header.integer(at: 0x3e, size: 2)
        guard entrySize >= 64, count > 0, count <= 4096, namesIndex < count,
            let table = try read(handle, at: sectionTable, count: entrySize * count), table.count == entrySize * count
        else { return nil }
        func section(_ index: Int) -> (name: Int, flags: Int, offset: Int, size: Int) {
            let base = index * entrySize
            return (
                table.integer(at: base, size: 4), table.integer(at: base + 8, size: 8),
                table.integer(at: base + 24, size: 8), table.integer(at: base + 32, size: 8)
            )
        }
        let names = section(namesIndex)
        guard names.size > 0, names.size <= 1 << 24, let nameBytes = try read(handle, at: names.offset, count: names.size)
        else { return nil }
        let wanted = Array(".debug_str".utf8) + [0]
        for index in 0..<count {
            let candidate = section(index)
            let shfCompressed = 0x800
            guard candidate.name >= 0, candidate.name + wanted.count <= nameBytes.count,
                nameBytes[candidate.name..<candidate.name + wanted.count].elementsEqual(wanted),
                candidate.flags & shfCompressed == 0,
                let strings = try read(handle, at: candidate.offset, count: min(candidate.size, searchLimit))
            else { continue }
            return version(inStrings: strings)
        }
        return nil
    }

    /// The `X` of the first `Swift version X (` (or `Swift version X` then a NUL) in some strings,
    /// where `X` starts with a digit.
    static func version(inStrings strings: Data) -> String? {
        let marker = Data("Swift version ".utf8)
        var from = strings.startIndex
        while let found = strings.range(of: marker, in: from..<strings.endIndex) {
            from = found.upperBound
            guard found.upperBound < strings.endIndex, (0x30...0x39).contains(strings[found.upperBound]) else { continue }
            var end = found.upperBound
            while end < strings.endIndex, end - found.upperBound < 64, strings[end] != 0, strings[end] != 0x20 { end += 1 }
            if let text = String(data: strings[found.upperBound..<end], encoding: .utf8) { return text }
        }
        return nil
    }

    /// Up to `count` bytes at `offset`, or nil where the range is not in the file.
    private static func read(_ handle: FileHandle, at offset: Int, count: Int) throws -> Data? {
        guard offset >= 0, count >= 0, count <= 1 << 26 else { return nil }
        try handle.seek(toOffset: UInt64(offset))
        return try handle.read(upToCount: count)
    }
}

extension Data {
    /// A little-endian unsigned integer of `size` bytes at `offset`, saturated into `Int`; 0 past the end.
    fileprivate func integer(at offset: Int, size: Int) -> Int {
        guard offset >= 0, size <= 8, offset <= count - size else { return 0 }
        var value: UInt64 = 0
        for byte in 0..<size { value |= UInt64(self[startIndex + offset + byte]) << (8 * byte) }
        return value > UInt64(Int.max) ? Int.max : Int(value)
    }
}
