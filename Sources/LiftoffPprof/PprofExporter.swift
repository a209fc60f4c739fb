import CZlib
import Foundation
import LiftoffProfile
import SwiftProtobuf

/// Writes a profile as pprof (`profile.proto`, gzip-compressed), the format continuous
/// profilers and `go tool pprof` read.
///
/// Sample types: `cpu_samples` (running samples; the default), `wall_samples` (every sample,
/// waiting ones included) and `cpu` in nanoseconds (the CPU time the thread used since its
/// previous sample). Each profile frame is a location with one line: its function (short name as the
/// name, full signature as the system name, file and declaration line where known), in a mapping
/// per object. Samples carry `thread`, `span` and `task` labels; the launch phases are comments.
public enum PprofExporter {
    /// The pprof message for `profile`; `defaultSampleType` is what pprof shows first
    /// (`cpu_samples`, or `wall_samples`). A profile that is not of a launch (`launch: false`, a
    /// running program's next seconds) lasts from its main entry, and its comments name no phases.
    public static func message(_ profile: Profile, defaultSampleType: String = "cpu_samples", launch: Bool = true)
        -> Perftools_Profiles_Profile
    {
        var strings = StringTable()
        var message = Perftools_Profiles_Profile()
        func valueType(_ type: String, _ unit: String) -> Perftools_Profiles_ValueType {
            var value = Perftools_Profiles_ValueType()
            value.type = strings.index(type)
            value.unit = strings.index(unit)
            return value
        }
        message.sampleType = [
            valueType("cpu_samples", "count"), valueType("wall_samples", "count"), valueType("cpu", "nanoseconds"),
        ]
        message.defaultSampleType = strings.index(defaultSampleType == "wall_samples" ? "wall_samples" : "cpu_samples")
        let rate = max(profile.metadata.samplingRateHz, 1)
        message.periodType = valueType("wall", "nanoseconds")
        message.period = Int64(1_000_000_000 / rate)
        message.durationNanos = Int64(
            clamping: launch ? profile.phases.endNs : NanosecondDuration.between(profile.phases.mainEntryNs, profile.phases.endNs).nanoseconds)
        message.timeNanos = startTimeNanos(profile.metadata.startTime)

        // Mappings: one per object, the program's first (pprof takes the first as the main binary).
        var mappingIDs: [String: UInt64] = [:]
        let program = profile.metadata.commandLine.first.map { URL(fileURLWithPath: $0).lastPathComponent }
        let objects = profile.frames.sorted { ($0.object == program ? 0 : 1) < ($1.object == program ? 0 : 1) }
        for frame in objects where mappingIDs[frame.object] == nil {
            var mapping = Perftools_Profiles_Mapping()
            mapping.id = UInt64(mappingIDs.count + 1)
            mapping.filename = strings.index(frame.object)
            mapping.hasFunctions_p = true
            mapping.hasFilenames_p = profile.frames.contains { $0.object == frame.object && $0.file != nil }
            mapping.hasLineNumbers_p = mapping.hasFilenames_p
            mapping.hasInlineFrames_p = profile.frames.contains { $0.object == frame.object && $0.isInlined }
            mappingIDs[frame.object] = mapping.id
            message.mapping.append(mapping)
        }
        // Functions: one per (name, file); locations: one per profile frame.
        var functionIDs: [String: UInt64] = [:]
        for (index, frame) in profile.frames.enumerated() {
            let key = frame.name + "\u{0}" + (frame.file ?? "")
            if functionIDs[key] == nil {
                var function = Perftools_Profiles_Function()
                function.id = UInt64(functionIDs.count + 1)
                function.name = strings.index(frame.displayName)
                function.systemName = strings.index(frame.name)
                function.filename = strings.index(frame.file ?? "")
                function.startLine = Int64(frame.line ?? 0)
                functionIDs[key] = function.id
                message.function.append(function)
            }
            var location = Perftools_Profiles_Location()
            location.id = UInt64(index + 1)
            location.mappingID = mappingIDs[frame.object] ?? 0
            var line = Perftools_Profiles_Line()
            line.functionID = functionIDs[key] ?? 0
            line.line = Int64(frame.line ?? 0)
            location.line = [line]
            message.location.append(location)
        }

        // Samples, merged when stack, labels and state agree.
        let owners = profile.sampleOwners()
        // A thread's name alone: continuous profilers make a series of every label set, and ids change every run.
        let threadNames = Dictionary(profile.threads.map { ($0.id, $0.name) }, uniquingKeysWith: { a, _ in a })
        struct Key: Hashable {
            var stack: Int
            var thread: Int
            var span: Int?
            var task: Int?
        }
        var order: [Key] = []
        var values: [Key: (cpu: Int64, wall: Int64, cpuNs: Int64)] = [:]
        for sample in 0..<profile.samples.count {
            let key = Key(
                stack: profile.samples.stack[sample], thread: profile.samples.thread[sample], span: owners.span[sample],
                task: owners.task[sample])
            let running = profile.samples.state[sample] == .running
            var value = values[key] ?? {
                order.append(key)
                return (0, 0, 0)
            }()
            let ticks = Int64(profile.samples.weight[sample])
            value.cpu += running ? ticks : 0
            value.wall += ticks
            value.cpuNs = value.cpuNs.addingReportingOverflow(Int64(clamping: profile.samples.cpuNs[sample])).overflow
                ? .max : value.cpuNs + Int64(clamping: profile.samples.cpuNs[sample])
            values[key] = value
        }
        let threadKey = strings.index("thread")
        let spanKey = strings.index("span")
        let taskKey = strings.index("task")
        let spanIDKey = strings.index("span_id")
        let traceIDKey = strings.index("trace_id")
        for key in order {
            guard let value = values[key] else { continue }
            var sample = Perftools_Profiles_Sample()
            var stack = key.stack
            var depth = 0
            while stack >= 0, depth <= profile.stacks.count {
                sample.locationID.append(UInt64(profile.stacks.frame[stack] + 1))
                stack = profile.stacks.parent[stack]
                depth += 1
            }
            sample.value = [value.cpu, value.wall, value.cpuNs]
            func label(_ key: Int64, _ text: String) -> Perftools_Profiles_Label {
                var label = Perftools_Profiles_Label()
                label.key = key
                label.str = strings.index(text)
                return label
            }
            sample.label.append(label(threadKey, threadNames[key.thread] ?? "thread"))
            if let span = key.span {
                sample.label.append(label(spanKey, profile.spans[span].name))
                // A traced span's W3C ids, as continuous profilers link a trace's spans to their samples.
                if let ids = profile.spans[span].attributes, let spanID = ids["span_id"], let traceID = ids["trace_id"] {
                    sample.label.append(label(spanIDKey, spanID))
                    sample.label.append(label(traceIDKey, traceID))
                }
            }
            if let task = key.task { sample.label.append(label(taskKey, profile.tasks[task].name)) }
            message.sample.append(sample)
        }

        // The launch phases, as comments.
        let phases = profile.phases
        func ms(_ ns: UInt64) -> String { String(format: "%.1f ms", Double(ns) / 1e6) }
        guard launch else {
            message.comment = [strings.index("liftoff profile of \(profile.metadata.commandLine.joined(separator: " ")), every thread")]
            message.stringTable = strings.strings
            return message
        }
        var comments = ["liftoff launch profile of \(profile.metadata.commandLine.joined(separator: " "))"]
        comments.append("pre-main: \(ms(NanosecondDuration.between(phases.processStartNs, phases.mainEntryNs).nanoseconds))")
        if let firstFrame = phases.firstFrameNs {
            comments.append("time to first frame: \(ms(firstFrame))")
            comments.append("main entry to first frame: \(ms(NanosecondDuration.between(phases.mainEntryNs, firstFrame).nanoseconds))")
        }
        for span in profile.spans where span.category == .callback {
            comments.append("\(span.name) (callback): \(ms(span.durationNs)) at \(ms(span.startNs))")
        }
        message.comment = comments.map { strings.index($0) }
        message.stringTable = strings.strings
        return message
    }

    /// `profile` as gzip-compressed pprof bytes.
    /// - Throws: when the message cannot be serialized or compressed.
    public static func data(_ profile: Profile, defaultSampleType: String = "cpu_samples", launch: Bool = true) throws -> Data {
        try gzip(message(profile, defaultSampleType: defaultSampleType, launch: launch).serializedData())
    }

    /// Nanoseconds since the epoch of an ISO 8601 time, 0 when it cannot be read.
    public static func startTimeNanos(_ text: String) -> Int64 {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let date = formatter.date(from: text) else { return 0 }
        return Int64(clamping: Int64(exactly: (date.timeIntervalSince1970 * 1e9).rounded()) ?? 0)
    }

    /// A gzip stream of `data` (zlib's deflate with a gzip header).
    public static func gzip(_ data: Data) throws -> Data {
        var stream = z_stream()
        // windowBits 15 + 16: a gzip header and trailer.
        guard deflateInit2_(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
                            Int32(MemoryLayout<z_stream>.size)) == Z_OK
        else { throw PprofError("zlib could not start compressing.") }
        defer { deflateEnd(&stream) }
        var output = Data()
        var input = [UInt8](data)
        let chunk = 1 << 16
        var buffer = [UInt8](repeating: 0, count: chunk)
        try input.withUnsafeMutableBufferPointer { source in
            stream.next_in = source.baseAddress
            stream.avail_in = uInt(source.count)
            var status: Int32 = Z_OK
            repeat {
                try buffer.withUnsafeMutableBufferPointer { target in
                    stream.next_out = target.baseAddress
                    stream.avail_out = uInt(chunk)
                    status = deflate(&stream, Z_FINISH)
                    guard status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR else {
                        throw PprofError("zlib failed while compressing (status \(status)).")
                    }
                    output.append(target.baseAddress!, count: chunk - Int(stream.avail_out))
                }
            } while status != Z_STREAM_END
        }
        return output
    }
}

/// Why a pprof file could not be made.
public struct PprofError: Error, CustomStringConvertible {
    /// One sentence.
    public var description: String
    init(_ description: String) { self.description = description }
}

/// The pprof string table: each string once, "" first.
struct StringTable {
    private(set) var strings: [String] = [""]
    private var indices: [String: Int64] = ["": 0]

    mutating func index(_ string: String) -> Int64 {
        if let known = indices[string] { return known }
        let index = Int64(strings.count)
        strings.append(string)
        indices[string] = index
        return index
    }
}
