import Foundation
import LiftoffProfile
import LiftoffSampler

#if canImport(Glibc)
import Glibc
#endif

/// Running a program under the agent: its environment, the folder its recordings go to, and the
/// one profile they make. `profile` and `record` both launch through it.
struct AgentLaunch {
    /// `libLiftoffAgent.so`.
    var library: String
    /// Where the agent writes one recording per program each process runs.
    var folder: URL
    /// Samples per second per thread.
    var rateHz: Int
    /// Whether the processes the program starts are profiled too.
    var followsChildren: Bool
    /// The blocking-call thread rules the agent checks on each program's main thread, each with
    /// its policy (`LIFTOFF_AGENT_RULES`: `1` for all of them, recorded, or
    /// `rule=policy,…`); nil for none.
    var rules: String?

    /// The audit library's file name: `liftoff` sets it in `LD_AUDIT` when it lies beside the agent.
    static let auditLibraryName = "libLiftoffAudit.so"

    /// Where the recordings of a launch go: a folder of this process's own in /dev/shm when that is
    /// an in-memory file system with room to spare, else `fallback`. Each recorded process creates
    /// its recording there: on a disk's file system that costs it about 0.25 ms here, in memory a
    /// tenth of it. Folders that a `liftoff` which has since died left there are removed.
    static func recordingsFolder(beside fallback: URL) -> URL {
        guard let memory = MemoryFolder.shared else { return fallback }
        return memory.appendingPathComponent(fallback.lastPathComponent, isDirectory: true)
    }

    /// This process's folder in /dev/shm, made once; nil when there is none to use.
    private enum MemoryFolder {
        static let shared: URL? = make()

        static func make() -> URL? {
            let root = "/dev/shm"
            var space = statvfs()
            // At least 512 MiB free, so that a tree's recordings cannot fill it.
            guard PageCache.isInMemoryFileSystem(root), statvfs(root, &space) == 0,
                UInt64(space.f_bavail).multipliedReportingOverflow(by: UInt64(space.f_frsize)).partialValue >= 512 << 20
            else { return nil }
            let prefix = "liftoff-\(getuid())-"
            for name in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] where name.hasPrefix(prefix) {
                guard let pid = Int32(name.dropFirst(prefix.count)), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
                try? FileManager.default.removeItem(atPath: root + "/" + name)
            }
            let folder = URL(fileURLWithPath: root + "/" + prefix + String(getpid()), isDirectory: true)
            guard mkdir(folder.path, 0o700) == 0 || errno == EEXIST else { return nil }
            atexit { if let folder = MemoryFolder.shared { rmdir(folder.path) } }
            return folder
        }
    }

    /// Makes the recordings folder, empty.
    func prepare() throws {
        cleanUp()
        do {
            try AtomicFile.createFolder(folder)
        } catch let error as ProfileError {
            throw CLIError(error.message)
        }
    }

    /// Removes the recordings and their folder.
    func cleanUp() {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [] {
            unlink(folder.appendingPathComponent(name).path)
        }
        rmdir(folder.path)
    }

    /// `base` with the agent preloaded, told where to write, how often to sample and whether to
    /// follow children.
    func environment(_ base: [String: String]) -> [String: String] {
        var environment = base
        let preload = [library] + (base["LD_PRELOAD"].map { [$0] } ?? [])
        environment["LD_PRELOAD"] = preload.joined(separator: ":")
        // The loader's timeline comes from the audit library beside the agent, after the user's own.
        if let audit = auditLibrary {
            let audits = (base["LD_AUDIT"].map { $0.split(separator: ":").map(String.init) } ?? []).filter { $0 != audit }
            environment["LD_AUDIT"] = (audits + [audit]).joined(separator: ":")
        }
        environment["LIFTOFF_AGENT_OUT"] = folder.path
        environment["LIFTOFF_AGENT_RATE"] = String(rateHz)
        environment["LIFTOFF_AGENT_CHILDREN"] = followsChildren ? "1" : "0"
        environment["LIFTOFF_AGENT_RULES"] = rules
        environment["LIFTOFF_AGENT_IMAGE"] = nil
        environment["LIFTOFF_AGENT_ROOT"] = nil
        return environment
    }

    /// Every file the recorded programs had mapped as objects, each once, in order.
    func mappedFiles() -> [String] {
        var seen = Set<String>()
        let recordings = (try? AgentRecording.loadAll(in: folder)) ?? []
        return recordings.flatMap(\.objectPaths).filter { seen.insert($0).inserted }
    }

    /// The profile of every recording: one per process, the one `liftoff` started first.
    /// - Throws: `AgentRecording.ReadError` when there is no recording or one is unreadable.
    /// With `ready` (the `--ready` expression and the streams it watched), the ready mark names
    /// the thread whose write made the line it matched.
    func profile(
        rootProcessID: Int32, readyNs: UInt64?, ready: (pattern: NSRegularExpression, streams: ReadyStreams)? = nil,
        keepsExecutorFrames: Bool = false
    ) throws -> Profile {
        let recordings = try AgentRecording.loadAll(in: folder)
        let readyThread = readyNs == nil ? nil : ready.flatMap { ready in
            AgentRecording.readyWriter(of: recordings, descriptors: Set(ready.streams.descriptors.map(Int.init))) { line in
                ready.pattern.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) != nil
            }
        }
        var profile = AgentRecording.profile(
            of: recordings, rootProcessID: Int(rootProcessID), readyNs: readyNs, readyThread: readyThread,
            keepsExecutorFrames: keepsExecutorFrames)
        if profile.phases.preMain != nil, profile.phases.preMain?.loader == nil, auditLibrary != nil {
            profile.phases.preMain?.loaderNote =
                "The loader did not run Liftoff's audit library (LD_AUDIT was cleared on the way, or the loader ignores it for this program), so the time before main is not split by object."
        }
        return profile
    }

    /// The loader's timeline of process `processID`'s last program, as the audit library or the
    /// agent left it in a file of its own (a program that records itself has no recording of the
    /// agent's to carry it); nil when there is none.
    func loaderTimeline(ofProcess processID: Int32) -> Profile.Loader? {
        let prefix = "\(processID)-"
        let images = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).compactMap { name -> Int? in
            guard name.hasPrefix(prefix), name.hasSuffix(".loader") else { return nil }
            return Int(name.dropFirst(prefix.count).dropLast(".loader".count))
        }
        guard let image = images.max() else { return nil }
        return AgentRecording.loaderTimeline(in: folder, processID: Int(processID), image: image)
    }

    /// Liftoff's audit library beside the agent, when it is there.
    var auditLibrary: String? {
        let path = URL(fileURLWithPath: library).deletingLastPathComponent().appendingPathComponent(Self.auditLibraryName).path
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    /// Liftoff's own libraries the launch loads: the agent and, when there is one, the audit
    /// library. A cold launch keeps them in memory, so that profiling adds no cold read of its own.
    var ownLibraries: [String] { [library] + (auditLibrary.map { [$0] } ?? []) }
}

/// Whether the agent can be loaded into a program: the dynamic loader honours LD_PRELOAD only in
/// a dynamically linked program that is not setuid or setgid.
enum Injectability {
    /// - Throws: `CLIError` with one sentence when `program` cannot take the agent.
    static func check(_ program: String, depth: Int = 0) throws {
        guard let path = ExecutableSearch.find(program) else { return }  // the runner says it cannot start
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        if info.st_mode & S_ISUID != 0 || info.st_mode & S_ISGID != 0 {
            throw CLIError(
                "\(path) is setuid or setgid: the loader ignores LD_PRELOAD for it, so it cannot be profiled this way (liftoff record still times it).")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else { return }
        let head = (try? handle.read(upToCount: 4096)) ?? Data()
        try? handle.close()
        if head.starts(with: Array("#!".utf8)) {
            // A script: the agent goes into its interpreter.
            guard depth < 4, let line = String(decoding: head, as: UTF8.self).split(separator: "\n").first else { return }
            let words = line.dropFirst(2).split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard var interpreter = words.first.map(String.init) else { return }
            if interpreter.hasSuffix("/env"), words.count > 1 { interpreter = String(words[1]) }
            return try check(interpreter, depth: depth + 1)
        }
        switch ELFFile.loading(path: path) {
        case .notELF:
            return  // the runner says it cannot start
        case .statical:
            throw CLIError(
                "\(path) is statically linked: no dynamic loader runs in it to load the agent, so it cannot be profiled this way (liftoff record still times it).")
        case .dynamic(let loader):
            guard FileManager.default.fileExists(atPath: loader) else {
                throw CLIError("\(path) needs the loader \(loader), which does not exist here, so it cannot start.")
            }
        }
    }
}

extension Injectability {
    /// Whether `program` records itself (it links Liftoff's sampler), as its executable shows:
    /// the sampler's marker section, or a library of Liftoff's among those it needs. A script
    /// (or a file that cannot be read) does not show it: the agent goes in, and stands down in
    /// a program that turns out to link Liftoff.
    static func linksLiftoff(_ program: String) -> Bool {
        guard let path = ExecutableSearch.find(program) else { return false }
        return ELFFile.linksLiftoff(path: path)
    }
}
