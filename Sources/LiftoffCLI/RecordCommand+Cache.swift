import Foundation
import LiftoffProfile

/// `record --cache`: the page cache each run starts with.
extension RecordCommand {
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
