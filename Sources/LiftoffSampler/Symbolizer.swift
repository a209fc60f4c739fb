internal import CLiftoffDWARF
import CLiftoffSampler
import Foundation
import LiftoffProfile
import Synchronization

/// A code address resolved to a function.
public struct SymbolizedFrame: Hashable, Sendable {
    /// Demangled function name. When no symbol covers the address: `object+0x1a2b30`, the object
    /// and the start of the function its call-frame information puts the address in, so one
    /// function's samples group together (perf's naming for stripped code); `[unknown in object]`
    /// when not even that is known. Never the name of another symbol.
    public var name: String
    /// File name of the object holding the address (`?` when no object does).
    public var object: String
    /// Bytes from the function's start (from the object's base when unresolved).
    public var offset: UInt
    /// Whether a symbol was found.
    public var isResolved: Bool
    /// The symbol as the object names it (mangled), when one was found.
    public var symbol: String?
    /// The source file of ``line``, as the compiler saw it (usually an absolute path).
    public var file: String?
    /// The line being executed: the address's own line in the innermost frame, the line that
    /// called the inlined function in a frame that inlined one. Nil when the debug information
    /// has none (code the compiler generated, or an object without DWARF).
    public var line: Int?
    /// The file that declares the function.
    public var declarationFile: String?
    /// The line that declares the function.
    public var declarationLine: Int?
    /// Whether the compiler inlined this function into the frame after it (its caller): it ran
    /// as part of that function's code, with no call of its own.
    public var isInlined: Bool

    /// Creates a resolved or unresolved frame.
    public init(
        name: String, object: String, offset: UInt, isResolved: Bool, symbol: String? = nil, file: String? = nil,
        line: Int? = nil, declarationFile: String? = nil, declarationLine: Int? = nil, isInlined: Bool = false
    ) {
        self.name = name
        self.object = object
        self.offset = offset
        self.isResolved = isResolved
        self.symbol = symbol
        self.file = file
        self.line = line
        self.declarationFile = declarationFile
        self.declarationLine = declarationLine
        self.isInlined = isInlined
    }

    /// `File.swift:42` for the line being executed, when it is known.
    public var location: String? { Profile.Frame.location(file: file, line: line) }
}

/// Turns code addresses into function names. One protocol, so renderers and tests can use a fake.
public protocol Symbolizer: Sendable {
    /// Resolves one address of this process to the function that holds it.
    func symbolize(_ address: UInt) -> SymbolizedFrame
    /// Resolves one address to what ran there, innermost first: the functions inlined at the
    /// address (each marked ``SymbolizedFrame/isInlined``), then the function that holds it.
    func frames(at address: UInt) -> [SymbolizedFrame]
}

extension Symbolizer {
    /// One frame, the function holding the address, for symbolizers without inlining information.
    public func frames(at address: UInt) -> [SymbolizedFrame] { [symbolize(address)] }
}

/// A ``Symbolizer`` that reads the ELF symbol tables (`.symtab` and `.dynsym`) of every object
/// loaded in this process, and of their separate debug files (found by build-id under
/// `/usr/lib/debug/.build-id/` and by `.gnu_debuglink`, as gdb and perf find them), and demangles
/// Swift (and C++) names. The vDSO's table is read from memory. Where an object (or its debug
/// file) has DWARF, frames also get their source file and line and the functions inlined at the
/// address, read with elfutils' libdw.
///
/// SwiftPM executables export no Swift symbols, so `dladdr` cannot name their frames; the
/// static `.symtab` can, in debug and release builds alike. Tables are read on first use of an
/// object and results are cached, so symbolizing the same address twice costs a dictionary lookup.
public final class ELFSymbolizer: Symbolizer {
    struct LoadedObject: Sendable {
        var path: String
        var displayName: String
        var base: UInt
        var segments: [Range<UInt>]
        var isVDSO: Bool
        /// Where the vDSO's image is in this process, when the object is another process's vDSO
        /// (the kernel maps the same image into every process).
        var image: [Range<UInt>]? = nil
    }

    /// What was read from one object: its symbols, and its DWARF when it has some.
    private struct ObjectInfo {
        var table: ELFSymbolTable?
        var dwarf: DWARFReader?
    }

    private struct State {
        var objects: [LoadedObject] = []
        var infos: [String: ObjectInfo] = [:]
        var cache: [UInt: [SymbolizedFrame]] = [:]
        var refreshed = false
    }

    // All state sits behind the mutex, so one symbolizer can serve several threads.
    private let state = Mutex(State())
    private let demangler = Demangler()

    /// Creates a symbolizer over the objects loaded now (it looks again when an address
    /// falls outside all of them, to pick up libraries loaded since).
    public init() {
        state.withLock { $0.objects = Self.loadedObjects() }
    }

    /// A symbolizer over another process's objects, as it recorded them (`liftoff profile`):
    /// each read from its file on disk, and its vDSO from this process's own (the kernel maps
    /// the same image into every process). Addresses outside them stay unresolved.
    init(recordedObjects: [LoadedObject]) {
        useRecordedObjects(recordedObjects)
    }

    /// Symbolizes addresses of another process (or program) from now on, whose objects are
    /// `recordedObjects`; what was read of each object file is kept, so a tree of processes that
    /// load the same libraries reads each once.
    func useRecordedObjects(_ recordedObjects: [LoadedObject]) {
        state.withLock { state in
            state.cache = [:]
            let ownVDSO = Self.loadedObjects().first(where: \.isVDSO)?.segments
            state.objects = recordedObjects.compactMap { object in
                guard object.isVDSO else { return object }
                guard let ownVDSO else { return nil }
                var recorded = object
                recorded.image = ownVDSO
                return recorded
            }
            state.refreshed = true  // never this process's own objects
        }
    }

    /// Lets go of what was read of each object (symbol tables, debug information), keeping the
    /// answers given so far: an address asked again costs a lookup; a new one reads its object again.
    public func releaseObjectData() {
        state.withLock { $0.infos = [:] }
    }

    /// The path of the loaded object holding `address`, without reading it (no symbols, no
    /// debug information): cheap enough to ask on a hot path. Nil outside every object.
    public func objectPath(containing address: UInt) -> String? {
        state.withLock { state in
            if let object = state.objects.first(where: { $0.segments.contains { $0.contains(address) } }) { return object.path }
            guard !state.refreshed else { return nil }
            state.objects = Self.loadedObjects()
            state.refreshed = true
            return state.objects.first { $0.segments.contains { $0.contains(address) } }?.path
        }
    }

    /// Whether the Swift runtime is a shared library of this process (`libswiftCore.so`), rather
    /// than linked into the executable (`-static-stdlib`, `-static-executable`).
    public var hasSharedSwiftRuntime: Bool {
        state.withLock { state in state.objects.contains { $0.path.hasSuffix("/libswiftCore.so") || $0.path == "libswiftCore.so" } }
    }

    public func symbolize(_ address: UInt) -> SymbolizedFrame {
        // frames(at:) always returns at least the function holding the address, last.
        frames(at: address).last ?? SymbolizedFrame(name: "0x" + String(address, radix: 16), object: "?", offset: address, isResolved: false)
    }

    public func frames(at address: UInt) -> [SymbolizedFrame] {
        state.withLock { state in
            if let cached = state.cache[address] { return cached }
            // Liftoff's own reads (symbol tables, DWARF), made while this symbolizer is locked:
            // unchecked by the blocking-call rules, whose reporter symbolizes in turn.
            let frames = BlockingCalls.exempt { resolve(address, &state) }
            state.cache[address] = frames
            return frames
        }
    }

    private func resolve(_ address: UInt, _ state: inout State) -> [SymbolizedFrame] {
        var object = state.objects.first { object in object.segments.contains { $0.contains(address) } }
        if object == nil, !state.refreshed {
            state.objects = Self.loadedObjects()
            state.refreshed = true
            object = state.objects.first { object in object.segments.contains { $0.contains(address) } }
        }
        guard let object else {
            return [SymbolizedFrame(name: "0x" + String(address, radix: 16), object: "?", offset: UInt(address), isResolved: false)]
        }
        let info: ObjectInfo
        if let known = state.infos[object.path] {
            info = known
        } else {
            info = Self.read(object)
            state.infos[object.path] = info
        }
        let linkAddress = UInt64(address &- object.base)
        let function = symbol(at: linkAddress, in: info.table, object: object)
        guard let dwarf = info.dwarf else { return [function] }
        return dwarf.frames(at: linkAddress, function: function, demangler: demangler)
    }

    /// The function holding `linkAddress`: the object's symbol that covers it, else the function
    /// the call-frame information puts it in, named by the object and its start.
    private func symbol(at linkAddress: UInt64, in table: ELFSymbolTable?, object: LoadedObject) -> SymbolizedFrame {
        let functionStart = table?.functionStart(containing: linkAddress)
        // A symbol covers the address unless a function of its own starts between the two (an
        // unsized symbol such as `_start` reaches to the end of its section).
        if let match = table?.nearest(linkAddress), match.covers, (functionStart ?? 0) <= match.start {
            return SymbolizedFrame(
                name: demangler.demangle(match.name), object: object.displayName, offset: UInt(linkAddress - match.start),
                isResolved: true, symbol: match.name)
        }
        if let functionStart {
            return SymbolizedFrame(
                name: Self.unnamedFunction(start: functionStart, object: object.displayName), object: object.displayName,
                offset: UInt(linkAddress - functionStart), isResolved: false)
        }
        // Nothing known: one name per object, so such addresses group together.
        return SymbolizedFrame(
            name: "[unknown in \(object.displayName)]", object: object.displayName, offset: UInt(linkAddress),
            isResolved: false)
    }

    /// `python3.11+0x1a2b30`: a function without a symbol, by its object and link-time start.
    static func unnamedFunction(start: UInt64, object: String) -> String { "\(object)+0x" + String(start, radix: 16) }

    private static func read(_ object: LoadedObject) -> ObjectInfo {
        if object.isVDSO { return ObjectInfo(table: readTable(of: object).table) }
        let (table, debugFile) = readTable(of: object)
        // DWARF from the debug file when there is one, else from the object itself.
        let dwarf = debugFile.flatMap { DWARFReader(path: $0) } ?? (table == nil ? nil : DWARFReader(path: object.path))
        return ObjectInfo(table: table, dwarf: dwarf)
    }

    /// The object's symbol table, merged with its debug file's, and the debug file's path.
    private static func readTable(of object: LoadedObject) -> (table: ELFSymbolTable?, debugFile: String?) {
        if object.isVDSO {
            // The vDSO has no file: its whole image is mapped from file offset 0. Its section headers
            // lie past the end of its loadable segment but inside the segment's last page, which is
            // mapped: read up to that page's end.
            let page = UInt(max(sysconf(Int32(_SC_PAGESIZE)), 4096))
            let segments = object.image ?? object.segments
            guard let start = segments.map(\.lowerBound).min(),
                let end = segments.map(\.upperBound).max(),
                let pointer = UnsafeRawPointer(bitPattern: start)
            else { return (nil, nil) }
            let mappedEnd = (end + page - 1) / page * page
            return (ELFSymbolTable(image: Data(bytes: pointer, count: Int(mappedEnd - start))), nil)
        }
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: object.path), options: .alwaysMapped),
            var table = ELFSymbolTable(image: data)
        else { return (nil, nil) }
        // MiniDebugInfo: the local functions' symbols, xz-compressed inside the stripped object.
        if let compressed = table.miniDebugInfo, let mini = miniDebugTable(compressed) { table = table.merged(with: mini) }
        // A separate debug file, as gdb and perf find them, has the full symbol table (libc's
        // internal functions, for one).
        for path in debugFileCandidates(for: object.path, table: table) {
            guard let debugData = try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped),
                let debugTable = ELFSymbolTable(image: debugData), debugTable.count > 0
            else { continue }
            // A build-id match is certain; a debug link must carry the same build-id when it has one.
            if !debugTable.buildID.isEmpty, !table.buildID.isEmpty, debugTable.buildID != table.buildID { continue }
            return (table.merged(with: debugTable), path)
        }
        return (table, nil)
    }

    /// The symbol table inside a `.gnu_debugdata` section, decompressed (up to 256 MB).
    static func miniDebugTable(_ compressed: Data) -> ELFSymbolTable? {
        var length = 0
        let decoded = compressed.withUnsafeBytes { bytes in
            lo_xz_decode(bytes.bindMemory(to: UInt8.self).baseAddress, bytes.count, 256 << 20, &length)
        }
        guard let decoded else { return nil }
        defer { free(decoded) }
        return ELFSymbolTable(image: Data(bytes: decoded, count: length))
    }

    /// Folders searched for separate debug files, in order (gdb's default `debug-file-directory`).
    static let debugFileDirectories = ["/usr/lib/debug"]

    /// The debuginfod client's caches: `$DEBUGINFOD_CACHE_PATH`, else `~/.cache/debuginfod_client`.
    static var debuginfodCaches: [String] {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["DEBUGINFOD_CACHE_PATH"], !path.isEmpty { return [path] }
        if let home = environment["HOME"], !home.isEmpty { return ["\(home)/.cache/debuginfod_client"] }
        return []
    }

    /// Where the debug file of the object at `path` may be: by build-id under
    /// `/usr/lib/debug/.build-id/ab/cdef….debug` or in the debuginfod client's cache, then by `.gnu_debuglink` next to the object,
    /// in its `.debug/` folder, and under `/usr/lib/debug` plus the object's folder.
    static func debugFileCandidates(for path: String, table: ELFSymbolTable) -> [String] {
        var candidates: [String] = []
        if table.buildID.count >= 2 {
            let hex = table.buildID.map { String(format: "%02x", $0) }.joined()
            for directory in debugFileDirectories {
                candidates.append("\(directory)/.build-id/\(hex.prefix(2))/\(hex.dropFirst(2)).debug")
            }
            // What a debuginfod client fetched before (gdb, perf, `debuginfod-find`), in its cache.
            for cache in debuginfodCaches { candidates.append("\(cache)/\(hex)/debuginfo") }
        }
        if let link = table.debugLink {
            let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
            candidates.append("\(folder)/\(link)")
            candidates.append("\(folder)/.debug/\(link)")
            for directory in debugFileDirectories { candidates.append("\(directory)\(folder)/\(link)") }
        }
        return candidates.filter { $0 != path }
    }

    private static func loadedObjects() -> [LoadedObject] {
        final class Box { var objects: [LoadedObject] = [] }
        let box = Box()
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        withExtendedLifetime(box) {
            lo_iterate_objects({ info, context in
                guard let info, let context else { return 0 }
                let box = Unmanaged<Box>.fromOpaque(context).takeUnretainedValue()
                let object = info.pointee
                var segments: [Range<UInt>] = []
                withUnsafeBytes(of: object.segment_start) { starts in
                    withUnsafeBytes(of: object.segment_end) { ends in
                        let startWords = starts.bindMemory(to: UInt.self)
                        let endWords = ends.bindMemory(to: UInt.self)
                        for index in 0..<Int(object.segment_count) where startWords[index] < endWords[index] {
                            segments.append(startWords[index]..<endWords[index])
                        }
                    }
                }
                let name = object.name.map { String(cString: $0) } ?? ""
                box.objects.append(
                    LoadedObject(
                        path: name, displayName: name, base: UInt(object.base), segments: segments,
                        isVDSO: name.hasPrefix("linux-vdso") || name.hasPrefix("linux-gate")))
                return 0
            }, Unmanaged.passUnretained(box).toOpaque())
        }
        return box.objects.enumerated().map { index, object in
            var object = object
            if object.path.isEmpty, index == 0 { object.path = executable }
            if object.path.isEmpty { object.path = "[anonymous \(index)]" }
            object.displayName = URL(fileURLWithPath: object.path).lastPathComponent
            return object
        }
    }
}
