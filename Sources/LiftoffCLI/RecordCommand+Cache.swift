import Foundation
import LiftoffProfile

/// `record --cache`: the page cache each run starts with.
extension RecordCommand {
    /// The files a cold run of `side` starts without: those its first warm-up mapped, as the
    /// agent saw them, or the executable and the libraries it links; with the executable, and
    /// without Liftoff's own libraries, which stay in memory so profiling adds no cold read.
    func filesToEvict(_ side: Side, agentLaunch: AgentLaunch?) -> [String] {
        var files = agentLaunch?.mappedFiles() ?? []
        if files.isEmpty { files = PageCache.linkedFiles(of: side.command[0]) }
        if let executable = Injectability.resolve(side.command[0]), !files.contains(executable) { files.insert(executable, at: 0) }
        let own = Set([agentLaunch?.library, agentLaunch?.auditLibrary].compactMap { $0 }.map {
            URL(fileURLWithPath: $0).resolvingSymlinksInPath().path
        })
        return files.filter { !own.contains(URL(fileURLWithPath: $0).resolvingSymlinksInPath().path) }
    }

    /// Sets up the page cache `--cache` asks for before one of `side`'s runs: for `cold`, evicts
    /// its files and says what stayed. Nil for `as-is`.
    func prepareCache(_ side: Side) -> Profile.CacheState? {
        switch cache {
        case .asIs: return nil
        case .warm: return Profile.CacheState(mode: CacheMode.warm.rawValue)
        case .cold:
            return Profile.CacheState(mode: CacheMode.cold.rawValue, files: PageCache.evict(side.cacheFiles))
        }
    }
}
