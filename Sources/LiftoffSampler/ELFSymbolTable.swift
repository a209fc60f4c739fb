import Foundation

/// The function symbols of one ELF object, read from its `.symtab` and `.dynsym` sections
/// and sorted by address, with the string tables they name kept for lookups.
struct ELFSymbolTable: Sendable {
    struct Symbol: Sendable {
        var start: UInt64
        var size: UInt64
        var nameOffset: UInt32
        var stringTable: UInt8
    }

    private(set) var symbols: [Symbol] = []
    private var stringTables: [[UInt8]] = []

    /// Number of function symbols.
    var count: Int { symbols.count }

    /// Parses an ELF64 little-endian image. Returns nil for anything else.
    init?(image: Data) {
        guard let parsed = image.withUnsafeBytes({ ELFSymbolTable.parse($0) }) else { return nil }
        self = parsed
    }

    private init() {}

    /// The symbol covering link-time address `address`, with its start.
    func lookup(_ address: UInt64) -> (name: String, start: UInt64)? {
        var low = 0
        var high = symbols.count
        while low < high {
            let middle = (low + high) / 2
            if symbols[middle].start <= address { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return nil }
        let symbol = symbols[low - 1]
        // A sized symbol covers [start, start + size); an unsized one reaches the next symbol.
        guard symbol.size == 0 || address < symbol.start + symbol.size else { return nil }
        return (name(of: symbol), symbol.start)
    }

    private func name(of symbol: Symbol) -> String {
        let table = stringTables[Int(symbol.stringTable)]
        let start = Int(symbol.nameOffset)
        guard start < table.count else { return "" }
        var end = start
        while end < table.count, table[end] != 0 { end += 1 }
        return String(decoding: table[start..<end], as: UTF8.self)
    }

    private static func parse(_ bytes: UnsafeRawBufferPointer) -> ELFSymbolTable? {
        func read<T: FixedWidthInteger>(_ offset: Int, as type: T.Type) -> T? {
            guard offset >= 0, offset + MemoryLayout<T>.size <= bytes.count else { return nil }
            return T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
        }
        // e_ident: magic, ELFCLASS64, ELFDATA2LSB.
        guard bytes.count >= 64, bytes[0] == 0x7F, bytes[1] == 0x45, bytes[2] == 0x4C, bytes[3] == 0x46,
            bytes[4] == 2, bytes[5] == 1,
            let sectionOffset = read(0x28, as: UInt64.self),
            let entrySize = read(0x3A, as: UInt16.self),
            let sectionCount = read(0x3C, as: UInt16.self),
            entrySize >= 64
        else { return nil }

        struct Section {
            var type: UInt32
            var offset: Int
            var size: Int
            var link: Int
        }
        var sections: [Section] = []
        for index in 0..<Int(sectionCount) {
            let base = Int(sectionOffset) + index * Int(entrySize)
            guard let type = read(base + 4, as: UInt32.self),
                let offset = read(base + 24, as: UInt64.self),
                let size = read(base + 32, as: UInt64.self),
                let link = read(base + 40, as: UInt32.self)
            else { return nil }
            sections.append(Section(type: type, offset: Int(offset), size: Int(size), link: Int(link)))
        }

        var table = ELFSymbolTable()
        var seen = Set<UInt64>()
        let symtab: UInt32 = 2
        let dynsym: UInt32 = 11
        // .symtab first: it is the complete table when present; .dynsym fills in the rest.
        for wanted in [symtab, dynsym] {
            for section in sections where section.type == wanted {
                guard section.link < sections.count else { continue }
                let strings = sections[section.link]
                guard strings.offset >= 0, strings.offset + strings.size <= bytes.count,
                    section.offset + section.size <= bytes.count
                else { continue }
                let tableIndex = UInt8(table.stringTables.count)
                table.stringTables.append(Array(UnsafeRawBufferPointer(rebasing: bytes[strings.offset..<strings.offset + strings.size])))
                let symbolSize = 24
                var entry = section.offset
                while entry + symbolSize <= section.offset + section.size {
                    defer { entry += symbolSize }
                    guard let nameOffset = read(entry, as: UInt32.self),
                        let info = read(entry + 4, as: UInt8.self),
                        let sectionIndex = read(entry + 6, as: UInt16.self),
                        let value = read(entry + 8, as: UInt64.self),
                        let size = read(entry + 16, as: UInt64.self)
                    else { break }
                    let type = info & 0xF
                    // STT_FUNC or STT_GNU_IFUNC, defined in some section.
                    guard type == 2 || type == 10, sectionIndex != 0, value != 0, nameOffset != 0 else { continue }
                    guard seen.insert(value).inserted else { continue }
                    table.symbols.append(Symbol(start: value, size: size, nameOffset: nameOffset, stringTable: tableIndex))
                }
            }
        }
        table.symbols.sort { $0.start < $1.start }
        return table
    }
}
