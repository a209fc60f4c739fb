import Foundation
import LiftoffProfile
import Testing

@testable import LiftoffSampler

/// A small ELF64 image, written field by field, that tests can break in one place at a time.
///
/// Sections: 0 null, 1 `.text` at 0x1000 (0x100 bytes), 2 `.strtab`, 3 `.symtab` (linked to 2),
/// 4 `.shstrtab`, 5 a note with a build-id. Symbols: `alpha` at 0x1000 (0x10 bytes) and the
/// unsized `beta` at 0x1010.
struct ELFImage {
    struct Section {
        var name: UInt32 = 0
        var type: UInt32 = 0
        var address: UInt64 = 0
        var offset: UInt64 = 0
        var size: UInt64 = 0
        var link: UInt32 = 0
    }

    var sections: [Section] = []
    var payload: [UInt8] = []
    var sectionEntrySize: UInt16 = 64
    var sectionCountOverride: UInt16?
    var namesIndex: UInt16 = 4

    static let payloadStart = 64

    init() {
        let strings = Array("\0alpha\0beta\0".utf8)
        let sectionNames = Array("\0.text\0.strtab\0.symtab\0.shstrtab\0.note\0".utf8)
        var symbols = [UInt8](repeating: 0, count: 24)  // the null symbol
        symbols += ELFImage.symbol(name: 1, value: 0x1000, size: 0x10)
        symbols += ELFImage.symbol(name: 7, value: 0x1010, size: 0)
        var note: [UInt8] = []
        for word in [UInt32(4), 4, 3] { note += withUnsafeBytes(of: word.littleEndian, Array.init) }
        note += Array("GNU\0".utf8) + [0xAB, 0xCD, 0xEF, 0x01]
        func place(_ bytes: [UInt8]) -> (UInt64, UInt64) {
            let offset = UInt64(ELFImage.payloadStart + payload.count)
            payload += bytes
            return (offset, UInt64(bytes.count))
        }
        let (stringsAt, stringsSize) = place(strings)
        let (symbolsAt, symbolsSize) = place(symbols)
        let (namesAt, namesSize) = place(sectionNames)
        let (noteAt, noteSize) = place(note)
        sections = [
            Section(),
            Section(name: 1, type: 1, address: 0x1000, offset: 0, size: 0x100),
            Section(name: 7, type: 3, offset: stringsAt, size: stringsSize),
            Section(name: 15, type: 2, offset: symbolsAt, size: symbolsSize, link: 2),
            Section(name: 23, type: 3, offset: namesAt, size: namesSize),
            Section(name: 33, type: 7, offset: noteAt, size: noteSize),
        ]
    }

    static func symbol(name: UInt32, value: UInt64, size: UInt64) -> [UInt8] {
        var bytes = withUnsafeBytes(of: name.littleEndian, Array.init)
        bytes += [0x12, 0]  // STB_GLOBAL, STT_FUNC
        bytes += withUnsafeBytes(of: UInt16(1).littleEndian, Array.init)  // in .text
        bytes += withUnsafeBytes(of: value.littleEndian, Array.init)
        bytes += withUnsafeBytes(of: size.littleEndian, Array.init)
        return bytes
    }

    var data: Data {
        var bytes = [UInt8](repeating: 0, count: 64)
        bytes[0...5] = [0x7F, 0x45, 0x4C, 0x46, 2, 1]
        bytes[6] = 1
        let tableOffset = UInt64(ELFImage.payloadStart + payload.count)
        func put<T: FixedWidthInteger>(_ value: T, at offset: Int, in target: inout [UInt8]) {
            withUnsafeBytes(of: value.littleEndian) { raw in
                for (index, byte) in raw.enumerated() { target[offset + index] = byte }
            }
        }
        put(tableOffset, at: 0x28, in: &bytes)
        put(sectionEntrySize, at: 0x3A, in: &bytes)
        put(sectionCountOverride ?? UInt16(sections.count), at: 0x3C, in: &bytes)
        put(namesIndex, at: 0x3E, in: &bytes)
        bytes += payload
        for section in sections {
            var entry = [UInt8](repeating: 0, count: 64)
            put(section.name, at: 0, in: &entry)
            put(section.type, at: 4, in: &entry)
            put(section.address, at: 16, in: &entry)
            put(section.offset, at: 24, in: &entry)
            put(section.size, at: 32, in: &entry)
            put(section.link, at: 40, in: &entry)
            bytes += entry
        }
        return Data(bytes)
    }
}

@Suite("ELF parser on hostile images", .timeLimit(.minutes(5)))
struct ELFHostileTests {
    @Test("the well-formed image parses: sized and unsized symbols, and its build-id")
    func wellFormed() throws {
        let table = try #require(ELFSymbolTable(image: ELFImage().data))
        #expect(table.lookup(0x1004)?.name == "alpha")
        #expect(table.lookup(0x1010)?.name == "beta")
        #expect(table.lookup(0x10FF)?.name == "beta", "an unsized symbol reaches the end of its section")
        #expect(table.lookup(0x1100) == nil)
        #expect(table.buildID == [0xAB, 0xCD, 0xEF, 0x01])
    }

    /// One broken field each; the parser must neither trap nor read outside the image.
    static let breakages: [(name: String, edit: @Sendable (inout ELFImage) -> Void, parses: Bool, symbols: Int)] = [
        ("a symbol table of Int.max bytes", { $0.sections[3].size = UInt64(Int.max) }, true, 0),
        ("a symbol table of 2^64 - 1 bytes", { $0.sections[3].size = .max }, false, 0),
        ("a symbol table at offset Int.max", { $0.sections[3].offset = UInt64(Int.max) }, true, 0),
        ("a string table of Int.max bytes at offset 1", {
            $0.sections[2].offset = 1
            $0.sections[2].size = UInt64(Int.max)
        }, true, 0),
        ("a symbol table linked to a missing section", { $0.sections[3].link = 40_000 }, true, 0),
        ("a symbol table linked to itself", { $0.sections[3].link = 3 }, true, 2),
        ("a symbol table cut mid-entry", { $0.sections[3].size -= 7 }, true, 1),
        ("a symbol whose name lies past its string table", { $0.sections[2].size = 3 }, true, 2),
        ("300 symbol tables", { image in
            for _ in 0..<300 { image.sections.append(image.sections[3]) }
        }, true, 2),
        ("a section table past the end", { $0.sectionCountOverride = 60_000 }, false, 0),
        ("section entries of 10 bytes", { $0.sectionEntrySize = 10 }, false, 0),
        ("section names from a missing section", { $0.namesIndex = 50_000 }, true, 2),
        ("a note whose sizes are 4 GiB", { image in
            let at = Int(image.sections[5].offset) - ELFImage.payloadStart
            for index in 0..<8 { image.payload[at + index] = 0xFF }
        }, true, 2),
        ("a symbol at the top of the address space", { image in
            let at = Int(image.sections[3].offset) - ELFImage.payloadStart + 48 + 8
            for index in 0..<16 { image.payload[at + index] = 0xFF }
        }, true, 2),
    ]

    @Test("a broken field is refused or skipped, never trusted", arguments: breakages.indices)
    func broken(_ index: Int) {
        let breakage = ELFHostileTests.breakages[index]
        var image = ELFImage()
        breakage.edit(&image)
        let table = ELFSymbolTable(image: image.data)
        #expect((table != nil) == breakage.parses, "\(breakage.name)")
        #expect((table?.count ?? 0) == breakage.symbols, "\(breakage.name)")
        for address in [0, 0x1000, 0x1010, UInt64.max] { _ = table?.lookup(address) }
    }

    @Test("a note with absurd sizes gives no build-id, and a name cut by its string table stops at the table's end")
    func clippedReads() throws {
        var note = ELFImage()
        let at = Int(note.sections[5].offset) - ELFImage.payloadStart
        for index in 0..<8 { note.payload[at + index] = 0xFF }
        #expect(try #require(ELFSymbolTable(image: note.data)).buildID == [])
        var short = ELFImage()
        short.sections[2].size = 4  // "\0alp"
        let table = try #require(ELFSymbolTable(image: short.data))
        #expect(table.lookup(0x1004)?.name == "alp")
        #expect(table.lookup(0x1010)?.name == "", "a name that starts past the table's end is empty")
    }

    @Test("every truncation of an image, and thousands of random corruptions, parse without trapping")
    func fuzzed() throws {
        let small = [UInt8](ELFImage().data)
        for length in 0..<small.count { _ = ELFSymbolTable(image: Data(small.prefix(length))) }
        #expect(ELFSymbolTable(image: Data(small.prefix(63))) == nil, "shorter than an ELF header")

        // A real executable's headers, sections and tables, with a few bytes changed at a time.
        let real = [UInt8](try Data(contentsOf: URL(fileURLWithPath: "/bin/true")))
        var generator = SplitMix64(seed: 13)
        var parsed = 0
        for round in 0..<3_000 {
            var bytes = round % 2 == 0 ? small : real
            for _ in 0..<(1 + generator.nextIndex(below: 8)) {
                // Aim at the header and the section table half the time: that is where the offsets are.
                let tableStart = bytes.count - (round % 2 == 0 ? small.count - 64 - ELFImage().payload.count : 64 * 30)
                let position = generator.nextIndex(below: 2) == 0
                    ? generator.nextIndex(below: bytes.count)
                    : min(bytes.count - 1, max(0, tableStart) + generator.nextIndex(below: max(1, bytes.count - max(0, tableStart))))
                bytes[position] = UInt8(truncatingIfNeeded: generator.next())
            }
            if let table = ELFSymbolTable(image: Data(bytes)) {
                parsed += 1
                _ = table.lookup(UInt64(generator.nextIndex(below: 0x10000)))
            }
        }
        #expect(parsed > 100, "most corruptions still leave a parsable image")
    }
}
