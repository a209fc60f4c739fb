internal import CLiftoffDWARF

/// The DWARF of one ELF file, read through elfutils' libdw: the source line of an address and
/// the functions inlined there.
///
/// Not thread-safe: ``ELFSymbolizer`` uses it under its lock.
final class DWARFReader {
    private let handle: OpaquePointer
    /// Names and paths by the address libdw keeps them at (they live as long as the handle), so
    /// each is converted and demangled once.
    private var functionNames: [UnsafePointer<CChar>: (mangled: String, name: String)] = [:]
    private var paths: [UnsafePointer<CChar>: String] = [:]

    /// The most frames one address resolves to (deeper inlining is cut, innermost kept).
    static let maxFrames = 32

    /// Opens the DWARF of the file at `path`; nil when it has none or libdw cannot read it.
    init?(path: String) {
        guard let handle = lo_dwarf_open(path) else { return nil }
        self.handle = handle
    }

    deinit { lo_dwarf_close(handle) }

    /// What ran at `linkAddress`, innermost first: the functions inlined there, then `function`
    /// (the symbol table's answer) with its file and line. An unresolved `function` takes the
    /// name DWARF gives it.
    func frames(at linkAddress: UInt64, function: SymbolizedFrame, demangler: Demangler) -> [SymbolizedFrame] {
        withUnsafeTemporaryAllocation(of: lo_source_frame.self, capacity: Self.maxFrames) { buffer in
            let count = Int(lo_dwarf_lookup(handle, linkAddress, buffer.baseAddress, Int32(Self.maxFrames)))
            return frames(UnsafeBufferPointer(rebasing: buffer[..<max(count, 0)]), function: function, demangler: demangler)
        }
    }

    /// `sources` (innermost first, as libdw gave them) as frames, the last one completing `function`.
    private func frames(
        _ sources: UnsafeBufferPointer<lo_source_frame>, function: SymbolizedFrame, demangler: Demangler
    ) -> [SymbolizedFrame] {
        let count = sources.count
        guard count > 0 else { return [function] }
        var frames: [SymbolizedFrame] = []
        frames.reserveCapacity(count)
        for source in sources[..<(count - 1)] {
            let names = source.function.map { name(of: $0, demangler) }
            var frame = SymbolizedFrame(
                name: names?.name ?? "[inlined, in \(function.object)]", object: function.object,
                offset: function.offset, isResolved: names != nil, symbol: names?.mangled, isInlined: true)
            describe(&frame, source)
            frames.append(frame)
        }
        var outer = function
        let source = sources[count - 1]
        if !function.isResolved, let pointer = source.function {
            let names = name(of: pointer, demangler)
            outer.name = names.name
            outer.symbol = names.mangled
            outer.isResolved = true
        }
        describe(&outer, source)
        frames.append(outer)
        return frames
    }

    private func describe(_ frame: inout SymbolizedFrame, _ source: lo_source_frame) {
        if let file = source.file, source.line > 0 {
            frame.file = path(file)
            frame.line = Int(source.line)
        }
        if let file = source.decl_file, source.decl_line > 0 {
            frame.declarationFile = path(file)
            frame.declarationLine = Int(source.decl_line)
        }
    }

    private func name(of pointer: UnsafePointer<CChar>, _ demangler: Demangler) -> (mangled: String, name: String) {
        if let known = functionNames[pointer] { return known }
        let mangled = String(cString: pointer)
        let names = (mangled, demangler.demangle(mangled))
        functionNames[pointer] = names
        return names
    }

    private func path(_ pointer: UnsafePointer<CChar>) -> String {
        if let known = paths[pointer] { return known }
        let path = String(cString: pointer)
        paths[pointer] = path
        return path
    }
}
