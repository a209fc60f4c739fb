import ArgumentParser
import Foundation
import LiftoffProfile
import LiftoffSampler

#if canImport(Glibc)
import Glibc
#endif

/// The page cache a launch starts with (`--cache`).
enum CacheMode: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// As it is: whatever earlier runs left in memory.
    case asIs = "as-is"
    /// The launch runs once unrecorded first, so its files are in memory.
    case warm
    /// Its files are evicted first: the executable and every file a first, unrecorded run mapped.
    case cold
    /// The whole page cache is dropped first (as root), as after a reboot: every file the launch
    /// touches, the C library's and the dentries on its paths included, starts cold.
    case coldSystem = "cold-system"

    /// Whether the launch starts without its files in memory.
    var isCold: Bool { self == .cold || self == .coldSystem }

    /// Whether `mode`, as a profile or `record.json` keeps it, starts without its files in memory.
    static func isCold(_ mode: String?) -> Bool { mode.flatMap(CacheMode.init(rawValue:))?.isCold ?? false }
}

/// Evicting files from the page cache and telling how much of them stays, without root:
/// `posix_fadvise(POSIX_FADV_DONTNEED)` drops a file's clean pages that no process maps, and
/// `mincore` on a mapping that touches nothing says which pages are in memory. Since Linux 5.2
/// `mincore` answers "all in memory" for a file the caller neither owns nor may write (and
/// `cachestat` refuses), so such a file's residency is unknown rather than made up; reading it
/// with `RWF_NOWAIT` is no way round, as recent kernels start reading ahead on such a read.
public enum PageCache {
    /// Evicts `paths` and records each one's size and what stayed in memory, with who keeps it.
    /// - Parameter paths: the files to evict; one that cannot be opened is left out.
    /// - Returns: each file's size, its resident bytes after the eviction (nil when the kernel
    ///   will not tell this user) and, for what stayed, who keeps it.
    public static func evict(_ paths: [String]) -> [Profile.CachedFile] {
        var files: [Profile.CachedFile] = []
        for path in paths {
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            _ = fdatasync(fd)
            _ = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
            guard let (size, measured) = residency(fd) else { continue }
            var resident = measured
            // A file system that keeps files in memory keeps all of it, whether or not it says so.
            if resident == nil, isInMemoryFileSystem(path) { resident = size }
            files.append(Profile.CachedFile(path: path, sizeBytes: size, residentBytes: resident))
        }
        // Who keeps what stayed, or may have: a process that maps it (its pages cannot be
        // dropped), or tmpfs.
        let stayed = Set(files.filter { ($0.residentBytes ?? 1) > 0 }.map(\.path))
        let holders = mappers(of: stayed)
        for index in files.indices where (files[index].residentBytes ?? 1) > 0 {
            if isInMemoryFileSystem(files[index].path) {
                files[index].keptBy = "its file system keeps files in memory (tmpfs)"
            } else if let who = holders[files[index].path], !who.isEmpty {
                files[index].keptBy = "mapped by " + who.sorted().joined(separator: ", ")
            }
        }
        return files
    }

    /// `state` once its run has ended: each file whose residency is known gets what the run read
    /// of it from storage, how much more of it is in memory now than when the run began.
    static func afterRun(_ state: Profile.CacheState) -> Profile.CacheState {
        var state = state
        for index in state.files.indices {
            guard let before = state.files[index].residentBytes else { continue }
            let fd = open(state.files[index].path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            guard let (_, now) = residency(fd), let now else { continue }
            state.files[index].readBytes = now > before ? now - before : 0
        }
        return state
    }

    /// The size of the open file `fd` and how many of its bytes are in memory, nil when the
    /// kernel cannot tell; nil for a file that cannot be stat'ed or mapped.
    static func residency(_ fd: Int32) -> (size: UInt64, resident: UInt64?)? {
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_size >= 0 else { return nil }
        let size = UInt64(info.st_size)
        guard size > 0 else { return (0, 0) }
        guard mincoreTellsTruth(info, fd: fd) else { return (size, nil) }
        let page = UInt64(max(sysconf(Int32(_SC_PAGESIZE)), 4096))
        guard let mapping = mmap(nil, Int(size), PROT_READ, MAP_SHARED, fd, 0), mapping != MAP_FAILED else { return nil }
        defer { munmap(mapping, Int(size)) }
        let pages = Int((size + page - 1) / page)
        var vector = [UInt8](repeating: 0, count: pages)
        guard mincore(mapping, Int(size), &vector) == 0 else { return (size, nil) }
        let residentPages = vector.reduce(0) { $0 + UInt64($1 & 1) }
        return (size, min(size, residentPages * page))
    }

    /// Whether `mincore` reports the page cache of the file `fd` as it is: the kernel tells the
    /// truth only to a caller that owns the file, may write it, or is privileged (`CAP_FOWNER`).
    static func mincoreTellsTruth(_ info: stat, fd: Int32) -> Bool {
        geteuid() == 0 || info.st_uid == geteuid() || access("/proc/self/fd/\(fd)", W_OK) == 0
    }

    /// Whether `path` is on a file system that keeps files in memory (tmpfs, ramfs): the type of
    /// the mount with the longest mount point above it, in /proc/self/mounts.
    static func isInMemoryFileSystem(_ path: String) -> Bool {
        let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return false }
        var best: (length: Int, type: Substring)?
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 3 else { continue }
            let point = fields[1].replacingOccurrences(of: "\\040", with: " ")
            let within = point == "/" || resolved == point || resolved.hasPrefix(point + "/")
            if within, point.count > (best?.length ?? -1) { best = (point.count, fields[2]) }
        }
        return best.map { $0.type == "tmpfs" || $0.type == "ramfs" } ?? false
    }

    /// For each of `paths`, the processes that map it (`name (pid)`), from /proc/*/maps.
    static func mappers(of paths: Set<String>) -> [String: [String]] {
        guard !paths.isEmpty else { return [:] }
        var result: [String: Set<String>] = [:]
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries where Int32(entry) != nil {
            guard let maps = try? String(contentsOfFile: "/proc/\(entry)/maps", encoding: .utf8) else { continue }
            var name = (try? String(contentsOfFile: "/proc/\(entry)/comm", encoding: .utf8)) ?? "process"
            name = name.trimmingCharacters(in: .whitespacesAndNewlines)
            if Int32(entry) == getpid() { name = "liftoff itself" }
            for line in maps.split(separator: "\n") {
                guard let slash = line.firstIndex(of: "/") else { continue }
                let path = String(line[slash...])
                if paths.contains(path) { result[path, default: []].insert("\(name) (\(entry))") }
            }
        }
        return result.mapValues { Array($0) }
    }

    /// Drops the whole page cache, dentries and inodes included (`sync`, then 3 to
    /// `/proc/sys/vm/drop_caches`), as `--cache cold-system` asks, then reads `keep` (Liftoff's own
    /// agent and audit library) back into memory, so that profiling adds no cold read of its own.
    /// Dropping is no setting: nothing is left to restore. Pages a process maps stay.
    /// - Throws: `CLIError` in one sentence when the kernel refuses (it needs root).
    static func dropAll(keeping keep: [String]) throws {
        sync()
        let fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CLIError(dropRefusal(errno)) }
        defer { close(fd) }
        let written = "3\n".withCString { write(fd, $0, 2) }
        guard written == 2 else { throw CLIError(dropRefusal(errno)) }
        for path in keep { touch(path) }
    }

    /// Refuses `--cache cold-system` before anything runs when the page cache cannot be dropped.
    /// - Throws: `ValidationError` in one sentence.
    static func checkCanDrop() throws {
        if access("/proc/sys/vm/drop_caches", W_OK) != 0 { throw ValidationError(dropRefusal(errno)) }
    }

    /// Why the page cache could not be dropped, in one sentence.
    static func dropRefusal(_ code: Int32) -> String {
        let reason = String(cString: strerror(code))
        return "--cache cold-system drops the whole page cache, which only root may do (/proc/sys/vm/drop_caches: \(reason)); "
            + "--cache cold evicts the launch's own files without root."
    }

    /// Reads all of `path` once, so that its pages are in memory.
    static func touch(_ path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
    }

    /// One sentence on a cold start's state, or nil when nothing stayed.
    static func sentence(_ state: Profile.CacheState) -> String {
        func mb(_ bytes: UInt64) -> String { String(format: "%.1f MB", Double(bytes) / 1e6) }
        let files = "\(state.files.count) files (\(mb(state.sizeBytes)))"
        var line = state.mode == CacheMode.coldSystem.rawValue
            ? "Cache: cold-system: the whole page cache was dropped before the launch, with the \(files) it maps"
            : "Cache: \(state.mode): \(files) evicted before the launch"
        let stayed = state.files.filter { ($0.residentBytes ?? 0) > 0 }
        let unknown = state.unknownFiles
        var unknownPart = ""
        if !unknown.isEmpty {
            let which = unknown.count == state.files.count ? "them" : "the other \(unknown.count) (\(mb(unknown.reduce(0) { $0 &+ $1.sizeBytes })))"
            unknownPart = "; how much of \(which) stayed is unknown, as the kernel tells only a file's owner, a user who may write it, or root"
            let kept = unknown.compactMap { file in
                file.keptBy.map { "\(URL(fileURLWithPath: file.path).lastPathComponent) is \($0)" }
            }
            if !kept.isEmpty { unknownPart += " (" + kept.prefix(3).joined(separator: "; ") + (kept.count > 3 ? "; …" : "") + ")" }
        }
        if stayed.isEmpty {
            if unknown.isEmpty { return line + ", none of it left in memory." }
            if unknown.count == state.files.count { return line + unknownPart + "." }
            let known = state.files.count - unknown.count
            let told = known == 1 ? "the one file the kernel tells about did not stay in memory" : "none of the \(known) files the kernel tells about stayed in memory"
            return line + "; " + told + unknownPart + "."
        }
        line += "; \(mb(state.residentBytes)) stayed in memory: "
        line += stayed.sorted { ($0.residentBytes ?? 0) > ($1.residentBytes ?? 0) }.prefix(3).map { file in
            let name = URL(fileURLWithPath: file.path).lastPathComponent
            return "\(name) \(mb(file.residentBytes ?? 0))" + (file.keptBy.map { " (\($0))" } ?? "")
        }.joined(separator: ", ")
        return line + (stayed.count > 3 ? ", …" : "") + unknownPart + "."
    }

    /// One sentence on what a cold run read of its files, or nil when it read none (or could not tell).
    static func readSentence(_ state: Profile.CacheState) -> String? {
        let read = state.filesRead
        guard !read.isEmpty else { return nil }
        func mb(_ bytes: UInt64) -> String {
            bytes < 1_000_000 ? "\((bytes + 999) / 1000) kB" : String(format: "%.1f MB", Double(bytes) / 1e6)
        }
        let total = read.reduce(0) { $0 &+ ($1.readBytes ?? 0) }
        return "Read from storage during the run: \(mb(total)) of \(read.count) file\(read.count == 1 ? "" : "s"): "
            + read.prefix(4).map { "\(URL(fileURLWithPath: $0.path).lastPathComponent) \(mb($0.readBytes ?? 0))" }.joined(separator: ", ")
            + (read.count > 4 ? ", …" : "") + "."
    }
}

extension PageCache {
    /// The files a cold run of `command` starts without: those its first, unrecorded run mapped,
    /// as the agent saw them (`firstRun`), or else the executable and the libraries it links; with
    /// the executable, and without Liftoff's own agent and audit library, which stay in memory so
    /// that profiling adds no cold read of its own.
    static func filesToEvict(_ command: [String], firstRun: AgentLaunch?) -> [String] {
        var files = firstRun?.mappedFiles() ?? []
        if files.isEmpty { files = linkedFiles(of: command[0]) }
        if let executable = ExecutableSearch.find(command[0]), !files.contains(executable) { files.insert(executable, at: 0) }
        let own = Set((firstRun?.ownLibraries ?? []).map { URL(fileURLWithPath: $0).resolvingSymlinksInPath().path })
        return files.filter { !own.contains(URL(fileURLWithPath: $0).resolvingSymlinksInPath().path) }
    }

    /// The executable `program` (a path, or a name on the PATH) and the shared libraries the
    /// loader would map for it, as its dynamic loader lists them (`ld.so --list`, which maps the
    /// objects and runs none of their code); the executable alone when it is statically linked
    /// or cannot be read. Libraries it opens later with `dlopen` are not among them.
    static func linkedFiles(of program: String) -> [String] {
        guard let executable = ExecutableSearch.find(program) else { return [] }
        guard let interpreter = interpreter(of: executable), FileManager.default.isExecutableFile(atPath: interpreter) else {
            return [executable]
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: interpreter)
        process.arguments = ["--list", executable]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return [executable] }
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        var files = [executable]
        for line in String(decoding: output, as: UTF8.self).split(separator: "\n") {
            // `libfoo.so.1 => /usr/lib/libfoo.so.1 (0x…)`, or `/lib64/ld-linux-x86-64.so.2 (0x…)`.
            let target = line.range(of: "=> ").map { line[$0.upperBound...] } ?? line.drop { $0 == " " || $0 == "\t" }
            guard target.hasPrefix("/"), let end = target.range(of: " (") else { continue }
            // The path the kernel's maps show (`/lib` is often a link to `/usr/lib`).
            let path = URL(fileURLWithPath: String(target[..<end.lowerBound])).resolvingSymlinksInPath().path
            if !files.contains(path) { files.append(path) }
        }
        return files
    }

    /// The program interpreter (`PT_INTERP`) an ELF64 executable names, read from its first
    /// pages (the program headers come first; the file is not mapped); nil for a statically
    /// linked program or anything that is not ELF64.
    static func interpreter(of path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let head = try? handle.read(upToCount: 65_536) else { return nil }
        return head.withUnsafeBytes { ELFSymbolTable.interpreter(in: $0) }
    }
}
