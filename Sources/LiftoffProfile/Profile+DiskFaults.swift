extension Profile {
    /// The page faults of a launch that read from storage, file by file, as the kernel recorded
    /// them for the program and every process it started (`liftoff profile`, a major-fault
    /// event per CPU opened before the program's exec).
    ///
    /// A fault the sampler's signal interrupted while it waited is retried and counted as a
    /// minor one, so the counts are "at least"; bytes read and the disk waits the sampler saw are
    /// the measures, this the where.
    public struct DiskFaults: Codable, Sendable, Equatable {
        /// Each file faulted on, the most faults first.
        public var files: [FaultedFile]
        /// Faults at addresses that no file mapping covered (anonymous memory swapped out).
        public var anonymous: Int
        /// Records the kernel dropped when a ring filled; more faults happened than counted.
        public var lost: UInt64
        /// Why nothing was recorded, in one sentence, when the kernel refused.
        public var refused: String?
        /// Faults after the launch was ready (a program's work after its launch), counted only.
        public var afterReady: Int?

        /// Creates a record of disk faults.
        public init(files: [FaultedFile] = [], anonymous: Int = 0, lost: UInt64 = 0, refused: String? = nil, afterReady: Int? = nil) {
            self.files = files
            self.anonymous = anonymous
            self.lost = lost
            self.refused = refused
            self.afterReady = afterReady
        }

        /// Every fault of the launch counted, in files and not.
        public var total: Int { files.reduce(anonymous) { $0 &+ $1.faults } }
    }

    /// One file a launch's page faults read from storage.
    public struct FaultedFile: Codable, Sendable, Equatable {
        /// The file, as the kernel named its mapping.
        public var path: String
        /// Faults on it.
        public var faults: Int
        /// Of them, faults before the `main` of the program that faulted.
        public var beforeMain: Int
        /// The page-aligned byte offsets in the file of the first faults, in the order they
        /// happened (at most ``offsetLimit``).
        public var offsets: [UInt64]
        /// The processes that faulted on it.
        public var processIDs: [Int]
        /// When the first fault on it happened, in nanoseconds since ``Profile/timeOriginNs``.
        public var firstNs: UInt64

        /// The most offsets kept per file.
        public static let offsetLimit = 64

        /// Creates a faulted file.
        public init(path: String, faults: Int, beforeMain: Int, offsets: [UInt64], processIDs: [Int], firstNs: UInt64) {
            self.path = path
            self.faults = faults
            self.beforeMain = beforeMain
            self.offsets = offsets
            self.processIDs = processIDs
            self.firstNs = firstNs
        }
    }
}
