import Foundation
import LiftoffProfile

extension AgentRecording {
    /// The file name Liftoff's audit library writes the loader's timeline of a program to, beside
    /// the agent's recording of it: `PID-IMAGE.loader` (see `lo_audit.h`).
    public static func loaderFileName(processID: Int, image: Int) -> String { "\(processID)-\(image).loader" }

    /// The loader's timeline the audit library wrote for one program, times in `CLOCK_MONOTONIC`
    /// nanoseconds and initializers named from their objects' symbols; nil when there is no such
    /// file or it holds no complete start (a line cut short, or one that does not parse, is skipped).
    public static func loaderTimeline(
        in folder: URL, processID: Int, image: Int, names: InitializerNames = InitializerNames()
    ) -> Profile.Loader? {
        let url = folder.appendingPathComponent(loaderFileName(processID: processID, image: image))
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return nil }
        return parseLoaderTimeline(text, names: names)
    }

    /// Initializers' names from their objects' symbol tables, each object's read once however
    /// many programs of a launch map it.
    public final class InitializerNames {
        private var tables: [String: ELFSymbolTable?] = [:]
        private let demangler = Demangler()

        /// No table read yet.
        public init() {}

        /// The function at link-time address `offset` of the object at `path`, demangled.
        func name(at offset: UInt64, in path: String) -> String? {
            if tables[path] == nil {
                tables[path] = (try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)).flatMap {
                    ELFSymbolTable(image: $0)
                }
            }
            return tables[path].flatMap { $0?.lookup(offset) }.map { demangler.demangle($0.name) }
        }
    }

    /// A loader timeline from the audit library's lines (`lo_audit.h`); nil without its start
    /// and relocation records.
    public static func parseLoaderTimeline(_ text: String, names: InitializerNames = InitializerNames()) -> Profile.Loader? {
        var start: UInt64?, relocated: UInt64?, initialized: UInt64?
        var objects: [Profile.LoadedObject] = []
        var position: [Int: Int] = [:]
        var raw: [(object: Int, offset: UInt64, start: UInt64, end: UInt64, cpu: UInt64, faults: UInt64, read: UInt64)] = []
        var truncated = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            let numbers = fields.dropFirst().map { UInt64($0) }
            switch fields.first {
            case "L": if numbers.count == 1 { start = numbers[0] }
            case "R": if numbers.count == 1 { relocated = numbers[0] }
            case "P": if numbers.count == 1 { initialized = numbers[0] }
            case "T": truncated = true
            case "O":
                guard fields.count == 10, let index = numbers[0].flatMap({ Int(exactly: $0) }), position[index] == nil,
                    let search = numbers[1], let mapped = numbers[2], let size = numbers[4],
                    let relative = numbers[5], let all = numbers[6], let plt = numbers[7]
                else { continue }
                position[index] = objects.count
                objects.append(
                    Profile.LoadedObject(
                        path: String(fields[9]), searchNs: search == 0 ? nil : search, mappedNs: mapped, sizeBytes: size,
                        relativeRelocations: relative, relocations: all, pltRelocations: plt))
            case "I":
                guard numbers.count == 7, let index = numbers[0].flatMap({ Int(exactly: $0) }), let object = position[index],
                    let offset = numbers[1], let begin = numbers[2], let end = numbers[3], end >= begin, let cpu = numbers[4],
                    let faults = numbers[5], let read = numbers[6]
                else { continue }
                raw.append((object, offset, begin, end, cpu, faults, read))
            default: continue
            }
        }
        guard let start, let relocated else { return nil }
        let initializers = raw.sorted { $0.start < $1.start }.map { entry -> Profile.Initializer in
            let object = objects[entry.object]
            let name = names.name(at: entry.offset, in: object.path)
            return Profile.Initializer(
                object: entry.object, function: name ?? "\(object.fileName)+0x\(String(entry.offset, radix: 16))",
                startNs: entry.start, endNs: entry.end, cpuNs: min(entry.cpu, entry.end - entry.start), majorFaults: entry.faults,
                bytesRead: entry.read)
        }
        return Profile.Loader(
            startNs: start, relocatedNs: relocated, initializedNs: initialized, objects: objects, initializers: initializers,
            truncated: truncated ? true : nil)
    }
}

extension Profile.Loader {
    /// The same timeline with every time made relative by `relative` (to a profile's origin).
    public func mapTimes(_ relative: (UInt64) -> UInt64) -> Profile.Loader {
        var copy = self
        copy.startNs = relative(startNs)
        copy.relocatedNs = relative(relocatedNs)
        copy.initializedNs = initializedNs.map(relative)
        for index in copy.objects.indices {
            copy.objects[index].searchNs = copy.objects[index].searchNs.map(relative)
            copy.objects[index].mappedNs = relative(copy.objects[index].mappedNs)
        }
        for index in copy.initializers.indices {
            copy.initializers[index].startNs = relative(copy.initializers[index].startNs)
            copy.initializers[index].endNs = relative(copy.initializers[index].endNs)
        }
        return copy
    }
}
