internal import CLiftoffDWARF
import Foundation

/// The function symbols of one ELF object, read from its `.symtab` and `.dynsym` sections
/// and sorted by address, with the string tables they name kept for lookups; and the object's
/// build-id and `.gnu_debuglink`, which lead to a separate debug file with the full symbol table.
package struct ELFSymbolTable: Sendable {
    typealias Symbol = lo_elf_symbol

    private(set) var symbols: [Symbol] = []
    private var stringTables: [[UInt8]] = []
    /// The GNU build-id note's bytes, empty when the object has none.
    private(set) var buildID: [UInt8] = []
    /// The file name in `.gnu_debuglink`, when the object has one.
    private(set) var debugLink: String?
    /// The functions the call-frame information (`.eh_frame_hdr`'s table) describes, by address:
    /// where a stripped object has no symbol, they still tell one function from another.
    private(set) var functionRanges: [Range<UInt64>] = []
    /// The names of its sections.
    private(set) var sectionNames: Set<String> = []
    /// The compressed `.gnu_debugdata` section (MiniDebugInfo), when the object has one.
    private(set) var miniDebugInfo: Data?
    /// The program interpreter (`PT_INTERP`: the dynamic loader) an executable names; nil for a
    /// statically linked program.
    private(set) var interpreter: String?

    /// A lookup's answer: the symbol, and whether it covers the address or is only the nearest
    /// one below it (the address lies past a sized symbol's end).
    struct Match {
        var name: String
        var start: UInt64
        var covers: Bool
    }

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
        guard let match = nearest(address), match.covers else { return nil }
        return (match.name, match.start)
    }

    /// The symbol covering `address`, or else the nearest symbol below it.
    func nearest(_ address: UInt64) -> Match? {
        let low = Self.countStarting(atOrBelow: address, in: symbols, start: \.start)
        guard low > 0 else { return nil }
        let symbol = symbols[low - 1]
        // A sized symbol covers [start, start + size) (an unsized one was given the rest of its
        // section); one whose size is still unknown reaches the next symbol.
        let (end, overflow) = symbol.start.addingReportingOverflow(symbol.size)
        let covers = symbol.size == 0 || overflow || address < end
        return Match(name: name(of: symbol), start: symbol.start, covers: covers)
    }

    /// Whether a function symbol is named `name`.
    func hasSymbol(named name: String) -> Bool {
        symbols.contains { self.name(of: $0) == name }
    }

    /// The start of the function whose call-frame information covers link-time `address`.
    func functionStart(containing address: UInt64) -> UInt64? {
        let low = Self.countStarting(atOrBelow: address, in: functionRanges, start: \.lowerBound)
        guard low > 0, functionRanges[low - 1].contains(address) else { return nil }
        return functionRanges[low - 1].lowerBound
    }

    /// How many of `items`, sorted by `start`, start at or below `address` (a binary search).
    private static func countStarting<Items: RandomAccessCollection>(
        atOrBelow address: UInt64, in items: Items, start: (Items.Element) -> UInt64
    ) -> Int where Items.Index == Int {
        var low = items.startIndex
        var high = items.endIndex
        while low < high {
            let middle = (low + high) / 2
            if start(items[middle]) <= address { low = middle + 1 } else { high = middle }
        }
        return low - items.startIndex
    }

    /// This table with `other`'s symbols added (a debug file's full table over a stripped
    /// object's): at an address both have, `other`'s symbol wins.
    func merged(with other: ELFSymbolTable) -> ELFSymbolTable {
        var result = other
        let offset = UInt8(clamping: result.stringTables.count)
        guard Int(offset) + stringTables.count <= Int(UInt8.max) else { return other }
        result.stringTables += stringTables
        var all = other.symbols.map { symbol in
            var symbol = symbol
            symbol.priority = 0
            return symbol
        }
        all += symbols.map { symbol in
            var symbol = symbol
            symbol.string_table += offset
            symbol.priority = 1
            return symbol
        }
        result.symbols = ELFSymbolTable.sortedUnique(all)
        result.buildID = buildID
        result.debugLink = debugLink
        result.functionRanges = functionRanges.isEmpty ? other.functionRanges : functionRanges
        result.sectionNames = sectionNames
        result.miniDebugInfo = miniDebugInfo
        return result
    }

    /// `symbols` sorted by address, one per address (``lo_elf_sort_unique``'s choice).
    private static func sortedUnique(_ symbols: [Symbol]) -> [Symbol] {
        var symbols = symbols
        let kept = symbols.withUnsafeMutableBufferPointer { buffer in
            lo_elf_sort_unique(buffer.baseAddress, buffer.count)
        }
        symbols.removeSubrange(kept...)
        return symbols
    }

    func name(of symbol: Symbol) -> String {
        let table = stringTables[Int(symbol.string_table)]
        let start = Int(symbol.name_offset)
        guard start < table.count else { return "" }
        var end = start
        while end < table.count, table[end] != 0 { end += 1 }
        return String(decoding: table[start..<end], as: UTF8.self)
    }

    /// A little-endian integer at `offset`, or nil when it does not lie wholly inside `bytes`.
    private static func integer<T: FixedWidthInteger>(in bytes: UnsafeRawBufferPointer, at offset: Int, as type: T.Type) -> T? {
        guard offset >= 0, offset <= bytes.count - MemoryLayout<T>.size else { return nil }
        return T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    /// The program interpreter (`PT_INTERP`) an ELF64 little-endian image names, from its program
    /// headers: `bytes` may be the file's first pages alone, as they come first. Nil for a statically
    /// linked program, or when the headers and the name do not lie within `bytes`.
    package static func interpreter(in bytes: UnsafeRawBufferPointer) -> String? {
        func read<T: FixedWidthInteger>(_ offset: Int, as type: T.Type) -> T? { integer(in: bytes, at: offset, as: type) }
        guard bytes.count >= 64, bytes[0] == 0x7F, bytes[1] == 0x45, bytes[2] == 0x4C, bytes[3] == 0x46,
            bytes[4] == 2, bytes[5] == 1,
            let headerOffset = read(0x20, as: UInt64.self), let headerSize = read(0x36, as: UInt16.self),
            let headerCount = read(0x38, as: UInt16.self), headerSize >= 56, let first = Int(exactly: headerOffset)
        else { return nil }
        var found: String?
        for index in 0..<Int(headerCount) {
            let base = first &+ index &* Int(headerSize)
            guard let type = read(base, as: UInt32.self), type == 3, let offset = read(base + 8, as: UInt64.self),
                let size = read(base + 32, as: UInt64.self), let start = Int(exactly: offset),
                let length = Int(exactly: min(size, 4096)), start >= 0, start <= bytes.count - length
            else { continue }
            found = String(decoding: bytes[start..<(start + length)].prefix { $0 != 0 }, as: UTF8.self)
        }
        return found
    }

    private static func parse(_ bytes: UnsafeRawBufferPointer) -> ELFSymbolTable? {
        func read<T: FixedWidthInteger>(_ offset: Int, as type: T.Type) -> T? { integer(in: bytes, at: offset, as: type) }
        // e_ident: magic, ELFCLASS64, ELFDATA2LSB.
        guard bytes.count >= 64, bytes[0] == 0x7F, bytes[1] == 0x45, bytes[2] == 0x4C, bytes[3] == 0x46,
            bytes[4] == 2, bytes[5] == 1,
            let sectionOffset = read(0x28, as: UInt64.self),
            let entrySize = read(0x3A, as: UInt16.self),
            let sectionCount = read(0x3C, as: UInt16.self),
            let namesIndex = read(0x3E, as: UInt16.self),
            entrySize >= 64, sectionOffset < UInt64(bytes.count)
        else { return nil }

        struct Section {
            var name: UInt32
            var type: UInt32
            var address: UInt64
            var offset: Int
            var size: Int
            var link: Int
        }
        var sections: [Section] = []
        for index in 0..<Int(sectionCount) {
            let base = Int(sectionOffset) + index * Int(entrySize)
            guard let name = read(base, as: UInt32.self),
                let type = read(base + 4, as: UInt32.self),
                let address = read(base + 16, as: UInt64.self),
                let offset = read(base + 24, as: UInt64.self),
                let size = read(base + 32, as: UInt64.self),
                let link = read(base + 40, as: UInt32.self),
                let offsetValue = Int(exactly: offset), let sizeValue = Int(exactly: size)
            else { return nil }
            sections.append(
                Section(name: name, type: type, address: address, offset: offsetValue, size: sizeValue, link: Int(link)))
        }
        func contents(_ section: Section) -> UnsafeRawBufferPointer? {
            guard section.offset >= 0, section.size >= 0, section.offset <= bytes.count,
                section.size <= bytes.count - section.offset
            else { return nil }
            return UnsafeRawBufferPointer(rebasing: bytes[section.offset..<section.offset + section.size])
        }
        func sectionName(_ section: Section) -> String {
            guard Int(namesIndex) < sections.count, let names = contents(sections[Int(namesIndex)]),
                Int(section.name) < names.count
            else { return "" }
            let tail = names[Int(section.name)...]
            return String(decoding: tail.prefix { $0 != 0 }, as: UTF8.self)
        }

        var table = ELFSymbolTable()
        table.interpreter = interpreter(in: bytes)
        let note: UInt32 = 7
        let nobits: UInt32 = 8
        for section in sections {
            let name = sectionName(section)
            table.sectionNames.insert(name)
            guard section.type != nobits, let body = contents(section) else { continue }
            if name == ".eh_frame_hdr" {
                let frames = sections.first { sectionName($0) == ".eh_frame" && $0.type != nobits }
                table.functionRanges = functionRanges(
                    hdr: body, at: section.address, frames: frames.flatMap(contents), at: frames?.address ?? 0)
            } else if name == ".gnu_debugdata" {
                table.miniDebugInfo = Data(body)
            }
        }
        for section in sections where section.type != nobits {
            if section.type == note, table.buildID.isEmpty, let body = contents(section) {
                table.buildID = buildIDNote(in: body) ?? []
            } else if sectionName(section) == ".gnu_debuglink", let body = contents(section) {
                let name = String(decoding: body.prefix { $0 != 0 }, as: UTF8.self)
                if !name.isEmpty, !name.contains("/") { table.debugLink = name }
            }
        }
        // Symbols name their string table by a byte; an image with more tables is not a real one.
        var found: [Symbol] = []
        let extents = sections.map { lo_elf_extent(address: $0.address, size: UInt64($0.size)) }
        let symtab: UInt32 = 2
        let dynsym: UInt32 = 11
        // .symtab first: it is the complete table when present; .dynsym fills in the rest.
        for wanted in [symtab, dynsym] {
            for section in sections where section.type == wanted && table.stringTables.count < Int(UInt8.max) - 1 {
                guard section.link < sections.count, let strings = contents(sections[section.link]),
                    let entries = contents(section)
                else { continue }
                let tableIndex = UInt8(table.stringTables.count)
                table.stringTables.append(copy(strings))
                let capacity = entries.count / 24
                let first = UInt32(clamping: found.count)
                found += [Symbol](unsafeUninitializedCapacity: capacity) { buffer, count in
                    count = extents.withUnsafeBufferPointer { extents in
                        lo_elf_function_symbols(
                            entries.baseAddress?.assumingMemoryBound(to: UInt8.self), entries.count,
                            strings.baseAddress?.assumingMemoryBound(to: UInt8.self), strings.count, tableIndex,
                            extents.baseAddress, extents.count, first, buffer.baseAddress, capacity)
                    }
                }
            }
        }
        // One symbol per address: where several name it (aliases such as `malloc`,
        // `__libc_malloc` and `__GI___libc_malloc`), the one perf would pick.
        table.symbols = sortedUnique(found)
        let symbolCount = table.symbols.count
        /// Whether a function symbol or a stub added before starts at `address`.
        var stubStarts: Set<UInt64> = []
        func isNew(_ address: UInt64) -> Bool {
            let low = countStarting(atOrBelow: address, in: table.symbols[..<symbolCount], start: \.start)
            if low > 0, table.symbols[low - 1].start == address { return false }
            return stubStarts.insert(address).inserted
        }
        // PLT stubs have no symbols. Each is named after the function it jumps to, `name@plt` as perf
        // names them: its `jmp *slot(%rip)` reads a GOT slot that a relocation ties to that function.
        // What is left (the resolver stub at a PLT's start) is named `[plt]`.
        let plt = sections.filter { [".plt", ".plt.sec", ".plt.got"].contains(sectionName($0)) && $0.address != 0 }
        if !plt.isEmpty, table.stringTables.count + 1 < Int(UInt8.max) {
            var stubs: [(address: UInt64, size: UInt64, slot: UInt64)] = []
            for section in plt {
                guard let body = contents(section) else { continue }
                let stride = sectionName(section) == ".plt.got" ? 8 : 16
                var start = 0
                while start + stride <= body.count {
                    defer { start += stride }
                    let stubAddress = section.address &+ UInt64(start)
                    if let slot = jumpSlot(in: body, at: start, length: stride, address: stubAddress) {
                        stubs.append((stubAddress, UInt64(stride), slot))
                    }
                }
            }
            let slots = relocatedSlots(
                Set(stubs.map(\.slot)), sections.map { ($0.type, $0.offset, $0.size, $0.link) }, bytes)
            var names: [UInt8] = [0]
            let tableIndex = UInt8(table.stringTables.count)
            for stub in stubs {
                guard let name = slots[stub.slot], names.count < Int(UInt32.max) - name.count - 6, isNew(stub.address)
                else { continue }
                table.symbols.append(
                    self.stub(start: stub.address, size: stub.size, nameOffset: UInt32(names.count), table: tableIndex))
                names += name + Array("@plt".utf8) + [0]
            }
            let placeholder = UInt32(names.count)
            names += Array("[plt]\0".utf8)
            table.stringTables.append(names)
            for section in plt where isNew(section.address) {
                table.symbols.append(
                    stub(start: section.address, size: UInt64(section.size), nameOffset: placeholder, table: tableIndex))
            }
            if table.symbols.count > symbolCount { table.symbols = sortedUnique(table.symbols) }
        }
        return table
    }

    /// A symbol for a PLT stub, named by `nameOffset` in string table `table`.
    private static func stub(start: UInt64, size: UInt64, nameOffset: UInt32, table: UInt8) -> Symbol {
        var symbol = Symbol()
        symbol.start = start
        symbol.size = size
        symbol.sized = 1
        symbol.name_offset = nameOffset
        symbol.string_table = table
        return symbol
    }

    /// A copy of `bytes`, made with one `memcpy`.
    private static func copy(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: bytes.count) { buffer, count in
            if let source = bytes.baseAddress, bytes.count > 0 {
                buffer.baseAddress!.initialize(from: source.assumingMemoryBound(to: UInt8.self), count: bytes.count)
            }
            count = bytes.count
        }
    }

    /// The function ranges of an `.eh_frame_hdr` at link-time `address` (``lo_elf_function_ranges``),
    /// with its FDEs read from `frames`, the `.eh_frame` section at `framesAddress`.
    private static func functionRanges(
        hdr: UnsafeRawBufferPointer, at address: UInt64, frames: UnsafeRawBufferPointer?, at framesAddress: UInt64
    ) -> [Range<UInt64>] {
        func read(into buffer: UnsafeMutableBufferPointer<lo_elf_range>, total: inout Int) -> Int {
            lo_elf_function_ranges(
                hdr.baseAddress?.assumingMemoryBound(to: UInt8.self), hdr.count, address,
                frames?.baseAddress?.assumingMemoryBound(to: UInt8.self), frames?.count ?? 0, framesAddress,
                buffer.baseAddress, buffer.count, &total)
        }
        var total = 0
        var none = [lo_elf_range]()
        _ = none.withUnsafeMutableBufferPointer { read(into: $0, total: &total) }
        let ranges = [lo_elf_range](unsafeUninitializedCapacity: total) { buffer, count in
            count = read(into: buffer, total: &total)
        }
        return ranges.map { $0.start..<$0.end }
    }

    /// The GOT slot a PLT stub jumps through: the address that its `jmp *disp32(%rip)` (`ff 25`,
    /// possibly after `endbr64` and a `bnd` prefix) reads.
    private static func jumpSlot(in body: UnsafeRawBufferPointer, at start: Int, length: Int, address: UInt64) -> UInt64? {
        var index = start
        while index + 6 <= start + length {
            if body[index] == 0xFF, body[index + 1] == 0x25 {
                let displacement = Int32(littleEndian: body.loadUnaligned(fromByteOffset: index + 2, as: Int32.self))
                let next = address &+ UInt64(index - start + 6)
                return next &+ UInt64(bitPattern: Int64(displacement))
            }
            index += 1
        }
        return nil
    }

    /// Name of the symbol each of the `wanted` relocated addresses (GOT slots) is bound to, from
    /// every `SHT_RELA` section that names symbols: `.rela.plt`'s jump slots and `.rela.dyn`'s GOT entries.
    private static func relocatedSlots(
        _ wanted: Set<UInt64>, _ sections: [(type: UInt32, offset: Int, size: Int, link: Int)], _ bytes: UnsafeRawBufferPointer
    ) -> [UInt64: [UInt8]] {
        func read<T: FixedWidthInteger>(_ offset: Int, as type: T.Type) -> T? { integer(in: bytes, at: offset, as: type) }
        func inside(_ offset: Int, _ size: Int) -> Bool { offset >= 0 && size >= 0 && offset <= bytes.count - size }
        var slots: [UInt64: [UInt8]] = [:]
        guard !wanted.isEmpty else { return slots }
        let rela: UInt32 = 4
        for section in sections where section.type == rela && section.link < sections.count {
            let symbols = sections[section.link]
            guard inside(section.offset, section.size), inside(symbols.offset, symbols.size),
                symbols.link < sections.count
            else { continue }
            let strings = sections[symbols.link]
            guard inside(strings.offset, strings.size) else { continue }
            var entry = section.offset
            while entry + 24 <= section.offset + section.size {
                defer { entry += 24 }
                guard let slot = read(entry, as: UInt64.self), let info = read(entry + 8, as: UInt64.self) else { break }
                guard wanted.contains(slot), slots[slot] == nil else { continue }
                let symbolIndex = Int(truncatingIfNeeded: info >> 32)
                let symbolEntry = symbols.offset + symbolIndex * 24
                guard symbolIndex > 0, symbolIndex < symbols.size / 24,
                    let nameOffset = read(symbolEntry, as: UInt32.self), Int(nameOffset) < strings.size
                else { continue }
                var end = strings.offset + Int(nameOffset)
                let nameStart = end
                while end < strings.offset + strings.size, bytes[end] != 0 { end += 1 }
                if end > nameStart { slots[slot] = Array(bytes[nameStart..<end]) }
            }
        }
        return slots
    }

    /// The descriptor of an `NT_GNU_BUILD_ID` note in a note section's bytes.
    private static func buildIDNote(in body: UnsafeRawBufferPointer) -> [UInt8]? {
        func word(_ offset: Int) -> Int? {
            guard offset >= 0, offset + 4 <= body.count else { return nil }
            return Int(UInt32(littleEndian: body.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        }
        func aligned(_ value: Int) -> Int { (value + 3) & ~3 }
        var offset = 0
        while let nameSize = word(offset), let descriptorSize = word(offset + 4), let type = word(offset + 8) {
            let nameStart = offset + 12
            let descriptorStart = nameStart + aligned(nameSize)
            guard nameSize <= body.count, descriptorSize <= body.count, descriptorStart + descriptorSize <= body.count
            else { return nil }
            let name = body[nameStart..<nameStart + nameSize]
            if type == 3, nameSize == 4, Array(name) == Array("GNU\0".utf8), descriptorSize > 0 {
                return Array(body[descriptorStart..<descriptorStart + descriptorSize])
            }
            offset = descriptorStart + aligned(descriptorSize)
        }
        return nil
    }
}
