import Foundation
import LiftoffProfile

/// `record --cache`: the page cache each run starts with.
extension RecordCommand {
    /// Sets up the page cache `--cache` asks for before one of `side`'s runs: for `cold`, evicts
    /// its files and says what stayed. Nil for `as-is`.
    /// `cold-system` drops the whole page cache first, keeping Liftoff's own libraries in memory.
    /// - Throws: `CLIError` when the page cache cannot be dropped (not root).
    func prepareCache(_ side: Side) throws -> Profile.CacheState? {
        switch cache {
        case .asIs: return nil
        case .warm: return Profile.CacheState(mode: CacheMode.warm.rawValue)
        case .cold:
            return Profile.CacheState(mode: CacheMode.cold.rawValue, files: PageCache.evict(side.cacheFiles))
        case .coldSystem:
            let agent = side.agent.map { agentOptions.launch(library: $0, folder: side.folder) }
            try PageCache.dropAll(keeping: [agent?.library, agent?.auditLibrary].compactMap { $0 })
            return Profile.CacheState(mode: CacheMode.coldSystem.rawValue, files: PageCache.evict(side.cacheFiles))
        }
    }
}
