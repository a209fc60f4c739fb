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
            try PageCache.dropAll(keeping: side.agent.map { agentOptions.launch(library: $0, folder: side.folder).ownLibraries } ?? [])
            return Profile.CacheState(mode: CacheMode.coldSystem.rawValue, files: PageCache.evict(side.cacheFiles))
        }
    }

    /// The run's profile at `url` with what only `liftoff` knows of its start: the page cache it
    /// started with (a program that recorded itself does not know it) and the files its page
    /// faults read; written back when either was added.
    /// - Throws: `ProfileError` when the profile cannot be read or written.
    static func completeProfile(at url: URL, cache: Profile.CacheState?, run result: ProcessRunner.Result) throws -> Profile {
        var profile = try Profile.load(from: url)
        var changed = false
        if let cache, profile.cache == nil {
            profile.cache = cache
            changed = true
        }
        if let faults = DiskFaultRecords.of(result, in: profile) {
            profile.diskFaults = faults
            changed = true
        }
        if changed { try profile.write(to: url) }
        return profile
    }
}
