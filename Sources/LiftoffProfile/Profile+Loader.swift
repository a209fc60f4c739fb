extension Profile {
    /// The dynamic loader's work before `main`, object by object, as Liftoff's audit library
    /// (`LD_AUDIT`) saw it: each object searched for and mapped, relocation, each initializer.
    /// Times are nanoseconds since the profile's origin.
    public struct Loader: Codable, Sendable, Equatable {
        /// The first moment the audit library saw (the loader had started).
        public var startNs: UInt64
        /// Every object mapped and relocated (the loader's namespace consistent).
        public var relocatedNs: UInt64
        /// Every initializer ran, the executable's too: `main` follows. Nil when the program
        /// never got there (it ended, or crashed, in an initializer).
        public var initializedNs: UInt64?
        /// The objects in the order the loader mapped them: the executable, the loader, the vDSO,
        /// then the libraries.
        public var objects: [LoadedObject]
        /// Each initializer (a `DT_INIT_ARRAY` entry) that ran, in the order it started.
        public var initializers: [Initializer]
        /// True when the audit library's buffer filled and later records were left out.
        public var truncated: Bool?

        /// Creates a timeline.
        public init(
            startNs: UInt64, relocatedNs: UInt64, initializedNs: UInt64?, objects: [LoadedObject], initializers: [Initializer],
            truncated: Bool? = nil
        ) {
            self.startNs = startNs
            self.relocatedNs = relocatedNs
            self.initializedNs = initializedNs
            self.objects = objects
            self.initializers = initializers
            self.truncated = truncated
        }

        /// When the last object was mapped: relocation follows.
        public var mappedNs: UInt64 { objects.map(\.mappedNs).max() ?? startNs }

        /// From the loader's start to the last object mapped.
        public var mappingNs: UInt64 { NanosecondDuration.between(startNs, mappedNs).nanoseconds }

        /// From the last object mapped to every object relocated.
        public var relocationNs: UInt64 { NanosecondDuration.between(mappedNs, relocatedNs).nanoseconds }

        /// Relocations of every object but the loader's own (it relocates itself before it can be audited).
        public var relocationCount: UInt64 {
            saturatingSum(objects.filter { !$0.isLoader }.map(\.relocations))
        }

        /// Each object's initializers' time, the outermost ones only (an initializer that loads
        /// a library runs that library's inside its own).
        public func initializerNs(ofObject object: Int) -> UInt64 {
            saturatingSum(outermostInitializers.filter { $0.object == object }.map(\.durationNs))
        }

        /// The initializers that ran inside no other one.
        public var outermostInitializers: [Initializer] {
            var outer: [Initializer] = []
            for initializer in initializers.sorted(by: { ($0.startNs, $1.endNs) < ($1.startNs, $0.endNs) }) {
                if let last = outer.last, initializer.startNs >= last.startNs, initializer.endNs <= last.endNs { continue }
                outer.append(initializer)
            }
            return outer
        }

        /// Every initializer's time, nested ones counted once.
        public var initializersNs: UInt64 { saturatingSum(outermostInitializers.map(\.durationNs)) }

        /// Time the initializers spent off a CPU without reading from storage: sleeping, waiting
        /// for a lock or for a core, not for the disk.
        public var initializersOffCPUWithoutReadingNs: UInt64 {
            saturatingSum(outermostInitializers.filter(\.readNothing).map(\.offCPUNs))
        }

        /// The objects that are Liftoff's own (its agent and audit library), not the program's.
        public func isLiftoffs(_ object: Int) -> Bool { objects.indices.contains(object) && objects[object].isLiftoffs }

        /// The program's objects by their initializers' time, longest first (Liftoff's left out),
        /// with each one's longest initializer: those that ran at least `minimumNs`.
        public func slowestInitializers(atLeast minimumNs: UInt64 = 0) -> [(object: Int, ns: UInt64, longest: Initializer)] {
            let outer = outermostInitializers
            return Set(outer.map(\.object)).filter { !isLiftoffs($0) }.compactMap { object in
                let own = outer.filter { $0.object == object }
                guard let longest = own.max(by: { $0.durationNs < $1.durationNs }) else { return nil }
                let ns = saturatingSum(own.map(\.durationNs))
                return ns >= minimumNs ? (object, ns, longest) : nil
            }.sorted { ($0.ns, $1.object) > ($1.ns, $0.object) }
        }

        /// The name of the time from the program's exec to the loader's first audited moment:
        /// the kernel's exec, the loader starting, and loading the audit library.
        public static let execTitle = "exec → loader"

        /// For reports: `Loader, object by object`.
        public static let title = "Loader, object by object"

        /// `12 objects mapped in 0.4 ms, relocated in 5.9 ms (200,049 relocations), initializers
        /// 42.5 ms: libbig.so 40.1 ms (slow)`.
        public var sentence: String {
            func ms(_ ns: UInt64) -> String { String(format: "%.1f ms", Double(ns) / 1e6) }
            var text = "\(objects.count) objects mapped in \(ms(mappingNs)), relocated in \(ms(relocationNs)) "
                + "(\(groupedDigits(relocationCount)) relocations)"
            if initializedNs != nil || !initializers.isEmpty {
                text += ", initializers \(ms(initializersNs))"
                let slowest = slowestInitializers(atLeast: 1_000_000).prefix(3).map { "\(objects[$0.object].fileName) \(ms($0.ns)) (\($0.longest.function))" }
                if !slowest.isEmpty { text += ": " + slowest.joined(separator: ", ") }
            }
            if truncated == true { text += "; later records were left out" }
            return text
        }
    }

    /// One object the loader mapped before `main`.
    public struct LoadedObject: Codable, Sendable, Equatable {
        /// Its path as the loader opened it (the executable's own, read from `/proc/self/exe`).
        public var path: String
        /// When the loader began to search for it by name; nil for the objects it did not search
        /// for (the executable, the loader itself, the vDSO).
        public var searchNs: UInt64?
        /// When it was mapped.
        public var mappedNs: UInt64
        /// The address span of its loadable segments.
        public var sizeBytes: UInt64
        /// Relative relocations (`DT_RELACOUNT`, and `DT_RELR`'s unpacked).
        public var relativeRelocations: UInt64
        /// All its relocations, the PLT's included.
        public var relocations: UInt64
        /// Relocations of its PLT (bound at the first call, unless bound now).
        public var pltRelocations: UInt64

        /// Creates an object.
        public init(
            path: String, searchNs: UInt64?, mappedNs: UInt64, sizeBytes: UInt64, relativeRelocations: UInt64,
            relocations: UInt64, pltRelocations: UInt64
        ) {
            self.path = path
            self.searchNs = searchNs
            self.mappedNs = mappedNs
            self.sizeBytes = sizeBytes
            self.relativeRelocations = relativeRelocations
            self.relocations = relocations
            self.pltRelocations = pltRelocations
        }

        /// The file name alone.
        public var fileName: String { path.split(separator: "/").last.map(String.init) ?? path }

        /// Whether this is the dynamic loader itself.
        public var isLoader: Bool { fileName.hasPrefix("ld-linux") || fileName.hasPrefix("ld64.so") || fileName == "ld.so" }

        /// Whether it is Liftoff's own (its agent or audit library), not the program's.
        public var isLiftoffs: Bool { fileName.hasPrefix("libLiftoff") }

        /// From the start of its search to its mapping; nil when it was not searched for.
        public var searchAndMapNs: UInt64? { searchNs.map { NanosecondDuration.between($0, mappedNs).nanoseconds } }
    }

    /// One initializer that ran before `main`.
    public struct Initializer: Codable, Sendable, Equatable {
        /// The object it belongs to (an index into ``Loader/objects``).
        public var object: Int
        /// Its function's name, where the object's symbols say; else `object+0xOFFSET`.
        public var function: String
        /// When it began.
        public var startNs: UInt64
        /// When it returned.
        public var endNs: UInt64
        /// The main thread's CPU time meanwhile.
        public var cpuNs: UInt64
        /// Page faults that read from storage meanwhile.
        public var majorFaults: UInt64
        /// Bytes read from storage meanwhile.
        public var bytesRead: UInt64

        /// Creates an initializer.
        public init(
            object: Int, function: String, startNs: UInt64, endNs: UInt64, cpuNs: UInt64, majorFaults: UInt64, bytesRead: UInt64
        ) {
            self.object = object
            self.function = function
            self.startNs = startNs
            self.endNs = endNs
            self.cpuNs = cpuNs
            self.majorFaults = majorFaults
            self.bytesRead = bytesRead
        }

        /// Off a CPU: waiting for a core, or blocked (a sleep, a lock, a read).
        public var offCPUNs: UInt64 { durationNs - min(durationNs, cpuNs) }

        /// Whether it read nothing from storage: its time off a CPU was not the disk's.
        public var readNothing: Bool { majorFaults == 0 && bytesRead == 0 }

        /// How long it ran.
        public var durationNs: UInt64 { NanosecondDuration.between(startNs, endNs).nanoseconds }
    }
}

/// The sum of `values`, or `UInt64.max` when it overflows.
private func saturatingSum(_ values: [UInt64]) -> UInt64 {
    var total: UInt64 = 0
    for value in values {
        let (sum, overflow) = total.addingReportingOverflow(value)
        total = overflow ? .max : sum
    }
    return total
}

/// `200,049`.
private func groupedDigits(_ value: UInt64) -> String {
    let digits = Array(String(value))
    var text = ""
    for (index, digit) in digits.enumerated() {
        if index > 0, (digits.count - index) % 3 == 0 { text.append(",") }
        text.append(digit)
    }
    return text
}
