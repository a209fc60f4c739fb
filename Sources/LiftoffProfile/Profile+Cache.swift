extension Profile {
    /// The page cache a launch started with, when `liftoff profile --cache` set it up: the mode
    /// and, for a cold launch, each file it evicted and how much of it was still in memory when
    /// the launch began.
    public struct CacheState: Codable, Sendable, Equatable {
        /// `cold` (files evicted first), `cold-system` (the whole page cache dropped first), `warm`
        /// (the launch ran once unrecorded first) or `as-is`.
        public var mode: String
        /// For `cold` and `cold-system`: the files evicted (the executable and every file its
        /// previous run mapped).
        public var files: [CachedFile]

        /// Creates a cache state.
        public init(mode: String, files: [CachedFile] = []) {
            self.mode = mode
            self.files = files
        }

        /// Bytes of the evicted files still in memory when the launch began, of the files whose
        /// residency could be read.
        public var residentBytes: UInt64 { files.reduce(0) { $0 &+ ($1.residentBytes ?? 0) } }
        /// The files whose residency could not be read.
        public var unknownFiles: [CachedFile] { files.filter { $0.residentBytes == nil } }
        /// The files the launch read from storage, the most first.
        public var filesRead: [CachedFile] {
            files.filter { ($0.readBytes ?? 0) > 0 }.sorted { ($0.readBytes ?? 0, $1.path) > ($1.readBytes ?? 0, $0.path) }
        }
        /// Bytes of the evicted files.
        public var sizeBytes: UInt64 { files.reduce(0) { $0 &+ $1.sizeBytes } }
    }

    /// One file of a cold launch.
    public struct CachedFile: Codable, Sendable, Equatable {
        /// Its path.
        public var path: String
        /// Its size.
        public var sizeBytes: UInt64
        /// How much of it was still in memory when the launch began: from `mincore`, or, for a
        /// file whose `mincore` answer the kernel makes up (one the caller neither owns nor may
        /// write), from reads that fail rather than wait for storage. Nil when neither could tell.
        public var residentBytes: UInt64?
        /// Why it could not be evicted, when some of it stayed: the processes that keep it mapped
        /// (`python3 (1234)`), or that its file system keeps files in memory (tmpfs).
        public var keptBy: String?
        /// How much more of it was in memory when the run ended than when it began: what the
        /// launch, with the kernel's read-ahead, read of it from storage. Absent when its
        /// residency is unknown, and in profiles written before it was kept.
        public var readBytes: UInt64?

        /// Creates a file's record.
        public init(path: String, sizeBytes: UInt64, residentBytes: UInt64?, keptBy: String? = nil, readBytes: UInt64? = nil) {
            self.readBytes = readBytes
            self.path = path
            self.sizeBytes = sizeBytes
            self.residentBytes = residentBytes
            self.keptBy = keptBy
        }
    }
}
