#if canImport(Glibc)
import CLiftoffProcess
import Foundation
import Glibc
import LiftoffProfile
import Synchronization
#endif

/// The orphans of the programs a run starts: processes left running when their parent ended (a
/// background job, a daemon that left the process group), which `liftoff` adopts as their
/// subreaper, stops and reaps.
extension ProcessRunner {
    /// Reaps the adopted orphans that have ended (see `adoptOrphans`), so they do not keep the
    /// run's process group alive as zombies.
    static func reapOrphans() {
        guard adoptsOrphans.load(ordering: .acquiring) else { return }
        var status: Int32 = 0
        while waitpid(-1, &status, WNOHANG) > 0 {}
    }

    /// Whether this process adopts the orphans of the programs it runs (see `adoptOrphans`).
    static let adoptsOrphans = Atomic<Bool>(false)

    /// Makes this process the subreaper of the programs it runs, so that a grandchild left
    /// running when its parent exits (`sh -c 'server &'`) becomes its child, to be ended with
    /// the run. For the `liftoff` process only: it then treats every child but the running
    /// one as such an orphan.
    static func adoptOrphans() {
        if lo_become_subreaper() == 0 { adoptsOrphans.store(true, ordering: .releasing) }
    }

    /// Stops the orphans a finished run left running (daemons): SIGTERM, then up to `graceNs` to
    /// end and write what they record. Returns them as `name (pid)`; `endOrphans` kills what is left.
    static func stopOrphans(graceNs: UInt64) -> [String] {
        guard adoptsOrphans.load(ordering: .acquiring) else { return [] }
        reapOrphans()
        let orphans = children(of: getpid())
        guard !orphans.isEmpty else { return [] }
        let named = orphans.map { orphan in
            let name = (try? String(contentsOfFile: "/proc/\(orphan)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "pid"
            return "\(name) (\(orphan))"
        }
        for orphan in orphans { kill(orphan, SIGTERM) }
        let start = MonotonicClock.nowNs
        while MonotonicClock.nowNs &- start < graceNs {
            reapOrphans()
            if children(of: getpid()).isEmpty { break }
            usleep(10_000)
        }
        return named
    }

    /// Kills and reaps every child of this process: the orphans a finished run left behind.
    static func endOrphans() {
        guard adoptsOrphans.load(ordering: .acquiring) else { return }
        // An orphan killed here may leave orphans of its own: a few rounds.
        for _ in 0..<8 {
            let orphans = children(of: getpid())
            if orphans.isEmpty { return }
            for orphan in orphans { kill(orphan, SIGKILL) }
            for orphan in orphans {
                var status: Int32 = 0
                while waitpid(orphan, &status, 0) < 0 && errno == EINTR {}
            }
        }
    }

    /// The processes whose parent is `parent`, from /proc.
    static func children(of parent: pid_t) -> [pid_t] {
        guard let directory = opendir("/proc") else { return [] }
        defer { closedir(directory) }
        var result: [pid_t] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let pid = pid_t(name), let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // After "pid (comm)": state, then the parent's pid.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, pid_t(fields[1]) == parent { result.append(pid) }
        }
        return result
    }
}
