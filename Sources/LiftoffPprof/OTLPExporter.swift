import Foundation
import LiftoffProfile

/// Writes a profile as an OpenTelemetry profiles request (OTLP, profiles v1development, the
/// layout of opentelemetry-proto 1.10 and later): the body of `POST /v1development/profiles` that
/// an OpenTelemetry Collector, Pyroscope or Parca accepts.
///
/// One resource (`service.name`: the program's name, or `service`; `process.*` and `host.name`)
/// holds two profiles of one sample type each, sharing one dictionary: `cpu` (running samples) and
/// `wall` (every sample, waiting ones included), both in nanoseconds, the sampling interval as their
/// period. Each sample keeps its time (`timestamps_unix_nano`) and carries `thread.name` (the name
/// alone: thread ids would make a new series of every run) and, where it ran in them,
/// `liftoff.span` and `liftoff.task`; a sample of a traced span (one with W3C `trace_id` and
/// `span_id` attributes, as `LiftoffTracer` spans have) links to it. The launch's phases and spans
/// are attributes of each profile.
public enum OTLPExporter {
    /// The request for `profile`; `service` names it (default: the program's file name).
    public static func request(_ profile: Profile, service: String? = nil) -> Otlp_ExportProfilesServiceRequest {
        var table = Tables()
        let program = profile.metadata.commandLine.first.map { URL(fileURLWithPath: $0).lastPathComponent } ?? ""

        // Mappings, one per object (the program's first); functions, one per (name, file);
        // locations, one per profile frame.
        var mappingOf: [String: Int32] = [:]
        let objects = profile.frames.map(\.object).sorted { ($0 == program ? 0 : 1) < ($1 == program ? 0 : 1) }
        for object in objects where mappingOf[object] == nil {
            var mapping = Otlp_Mapping()
            mapping.filenameStrindex = table.string(object)
            mappingOf[object] = Int32(table.dictionary.mappingTable.count)
            table.dictionary.mappingTable.append(mapping)
        }
        var functionOf: [String: Int32] = [:]
        var locationOfFrame: [Int32] = []
        for frame in profile.frames {
            let key = frame.name + "\u{0}" + (frame.file ?? "")
            if functionOf[key] == nil {
                var function = Otlp_Function()
                function.nameStrindex = table.string(frame.displayName)
                function.systemNameStrindex = table.string(frame.name)
                function.filenameStrindex = table.string(frame.file ?? "")
                function.startLine = Int64(frame.line ?? 0)
                functionOf[key] = Int32(table.dictionary.functionTable.count)
                table.dictionary.functionTable.append(function)
            }
            var location = Otlp_Location()
            location.mappingIndex = mappingOf[frame.object] ?? 0
            var line = Otlp_Line()
            line.functionIndex = functionOf[key] ?? 0
            line.line = Int64(frame.line ?? 0)
            location.lines = [line]
            locationOfFrame.append(Int32(table.dictionary.locationTable.count))
            table.dictionary.locationTable.append(location)
        }
        // Stacks, leaf first, made when a sample first needs one.
        var stackOf: [Int: Int32] = [:]
        func stackIndex(_ leaf: Int) -> Int32 {
            if let known = stackOf[leaf] { return known }
            var stack = Otlp_Stack()
            var current = leaf
            while current >= 0, current < profile.stacks.count, stack.locationIndices.count <= profile.stacks.count {
                let frame = profile.stacks.frame[current]
                if frame >= 0, frame < locationOfFrame.count { stack.locationIndices.append(locationOfFrame[frame]) }
                current = profile.stacks.parent[current]
            }
            let index = Int32(table.dictionary.stackTable.count)
            table.dictionary.stackTable.append(stack)
            stackOf[leaf] = index
            return index
        }

        // Samples: one per stack and attributes, a value and a time per recorded row.
        let origin = startTimeNanos(profile.metadata.startTime)
        let intervalNs = Int64(clamping: profile.samplingIntervalNs)
        let owners = profile.sampleOwners()
        let threadNames = Dictionary(profile.threads.map { ($0.id, $0.name) }, uniquingKeysWith: { first, _ in first })
        var cpu = Samples()
        var wall = Samples()
        for row in 0..<profile.samples.count {
            let leaf = profile.samples.stack[row]
            guard leaf >= 0, leaf < profile.stacks.count else { continue }
            var attributes = [table.attribute("thread.name", .string(threadNames[profile.samples.thread[row]] ?? "thread"))]
            var link: Int32 = 0
            if let span = owners.span[row] {
                attributes.append(table.attribute("liftoff.span", .string(profile.spans[span].name)))
                if let ids = profile.spans[span].attributes, let traceID = ids["trace_id"], let spanID = ids["span_id"] {
                    link = table.link(traceID: traceID, spanID: spanID)
                }
            }
            if let task = owners.task[row] { attributes.append(table.attribute("liftoff.task", .string(profile.tasks[task].name))) }
            let stack = stackIndex(leaf)
            let value = Int64(profile.samples.ticks(row)).multipliedReportingOverflow(by: intervalNs)
            let nanoseconds = value.overflow ? Int64.max : value.partialValue
            let time = origin &+ profile.samples.timeNs[row]
            wall.add(stack, attributes, link, nanoseconds, time)
            if profile.samples.state[row] == .running { cpu.add(stack, attributes, link, nanoseconds, time) }
        }

        // The launch, as each profile's attributes.
        let phases = profile.phases
        var launch: [Int32] = [
            table.attribute("liftoff.pre_main", .int(phases.mainEntryNs &- min(phases.processStartNs, phases.mainEntryNs)), unit: "ns"),
            table.attribute("liftoff.main_entry", .int(phases.mainEntryNs), unit: "ns"),
            table.attribute("liftoff.end", .int(phases.endNs), unit: "ns"),
        ]
        if let firstFrame = phases.firstFrameNs {
            launch.append(table.attribute("liftoff.first_frame", .int(firstFrame), unit: "ns"))
        }
        if !profile.spans.isEmpty {
            var spans = Otlp_ArrayValue()
            spans.values = profile.spans.map { span in
                var list = Otlp_KeyValueList()
                list.values = [
                    keyValue("name", .string(span.name)), keyValue("category", .string(span.category.rawValue)),
                    keyValue("start_ns", .int(span.startNs)), keyValue("duration_ns", .int(span.durationNs)),
                ]
                var value = Otlp_AnyValue()
                value.kvlistValue = list
                return value
            }
            var value = Otlp_AnyValue()
            value.arrayValue = spans
            launch.append(table.attribute("liftoff.spans", value))
        }

        func made(_ type: String, _ samples: Samples) -> Otlp_Profile {
            var made = Otlp_Profile()
            made.sampleType = table.valueType(type, "nanoseconds")
            made.periodType = table.valueType(type, "nanoseconds")
            made.period = intervalNs
            made.timeUnixNano = origin
            made.durationNano = phases.endNs
            made.profileID = profileID(profile, type)
            made.attributeIndices = launch
            made.samples = samples.order.map { key in
                var sample = Otlp_Sample()
                sample.stackIndex = key.stack
                sample.attributeIndices = key.attributes
                sample.linkIndex = key.link
                let recorded = samples.values[[key.stack, key.link] + key.attributes]
                sample.values = recorded?.values ?? []
                sample.timestampsUnixNano = recorded?.times ?? []
                return sample
            }
            return made
        }
        var scope = Otlp_ScopeProfiles()
        scope.scope.name = "liftoff"
        scope.scope.version = LiftoffVersion.current
        scope.profiles = [made("cpu", cpu), made("wall", wall)]

        var resource = Otlp_ResourceProfiles()
        let serviceName = service.flatMap { $0.isEmpty ? nil : $0 } ?? (program.isEmpty ? "unknown_service" : program)
        resource.resource.attributes = [keyValue("service.name", .string(serviceName))]
        if !program.isEmpty { resource.resource.attributes.append(keyValue("process.executable.name", .string(program))) }
        if !profile.metadata.commandLine.isEmpty {
            var arguments = Otlp_ArrayValue()
            arguments.values = profile.metadata.commandLine.map { argument in
                var value = Otlp_AnyValue()
                value.stringValue = argument
                return value
            }
            var value = Otlp_AnyValue()
            value.arrayValue = arguments
            resource.resource.attributes.append(Otlp_KeyValue.with {
                $0.key = "process.command_args"
                $0.value = value
            })
        }
        if !profile.metadata.host.name.isEmpty {
            resource.resource.attributes.append(keyValue("host.name", .string(profile.metadata.host.name)))
        }
        resource.scopeProfiles = [scope]

        var request = Otlp_ExportProfilesServiceRequest()
        request.resourceProfiles = [resource]
        request.dictionary = table.dictionary
        return request
    }

    /// `profile` as the bytes of an OTLP/HTTP protobuf request body.
    /// - Throws: when the message cannot be serialized.
    public static func data(_ profile: Profile, service: String? = nil) throws -> Data {
        try request(profile, service: service).serializedData()
    }

    /// A plain attribute's value.
    enum Value {
        case string(String)
        case int(UInt64)
    }

    static func anyValue(_ value: Value) -> Otlp_AnyValue {
        var any = Otlp_AnyValue()
        switch value {
        case .string(let text): any.stringValue = text
        case .int(let number): any.intValue = Int64(clamping: number)
        }
        return any
    }

    static func keyValue(_ key: String, _ value: Value) -> Otlp_KeyValue {
        var pair = Otlp_KeyValue()
        pair.key = key
        pair.value = anyValue(value)
        return pair
    }

    /// 16 bytes naming the profile: a hash of the program, its start and the sample type, never all zero.
    static func profileID(_ profile: Profile, _ type: String) -> Data {
        var bytes: [UInt8] = []
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for round in 0..<2 {
            for byte in "\(round)\u{1}\(profile.metadata.commandLine.joined(separator: " "))\u{1}\(profile.metadata.startTime)\u{1}\(type)".utf8 {
                hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
            }
            withUnsafeBytes(of: hash.bigEndian) { bytes += $0 }
        }
        if bytes.allSatisfy({ $0 == 0 }) { bytes[15] = 1 }
        return Data(bytes)
    }

    /// Nanoseconds since the epoch of an ISO 8601 time, 0 when it cannot be read.
    public static func startTimeNanos(_ text: String) -> UInt64 {
        UInt64(clamping: max(PprofExporter.startTimeNanos(text), 0))
    }

    /// The samples of one profile, in the order their keys were first seen.
    struct Samples {
        var order: [(stack: Int32, attributes: [Int32], link: Int32)] = []
        var values: [[Int32]: (values: [Int64], times: [UInt64])] = [:]

        mutating func add(_ stack: Int32, _ attributes: [Int32], _ link: Int32, _ value: Int64, _ time: UInt64) {
            let key = [stack, link] + attributes
            if values[key] == nil {
                order.append((stack, attributes, link))
                values[key] = ([], [])
            }
            values[key]!.values.append(value)
            values[key]!.times.append(time)
        }
    }

    /// The shared tables, each with its zero value first, and their look-ups.
    struct Tables {
        var dictionary: Otlp_ProfilesDictionary = {
            var dictionary = Otlp_ProfilesDictionary()
            dictionary.mappingTable = [Otlp_Mapping()]
            dictionary.locationTable = [Otlp_Location()]
            dictionary.functionTable = [Otlp_Function()]
            dictionary.linkTable = [Otlp_Link()]
            dictionary.stringTable = [""]
            dictionary.attributeTable = [Otlp_KeyValueAndUnit()]
            dictionary.stackTable = [Otlp_Stack()]
            return dictionary
        }()
        private var strings: [String: Int32] = ["": 0]
        private var plainAttributes: [String: Int32] = [:]
        private var links: [String: Int32] = [:]

        mutating func string(_ text: String) -> Int32 {
            if let known = strings[text] { return known }
            let index = Int32(dictionary.stringTable.count)
            dictionary.stringTable.append(text)
            strings[text] = index
            return index
        }

        /// The index of the link to a W3C trace's span (hex ids), each once; 0 for ids that are not hex of the right length.
        mutating func link(traceID: String, spanID: String) -> Int32 {
            if let known = links[traceID + spanID] { return known }
            guard let trace = Self.bytes(hex: traceID, count: 16), let span = Self.bytes(hex: spanID, count: 8) else { return 0 }
            var link = Otlp_Link()
            link.traceID = trace
            link.spanID = span
            let index = Int32(dictionary.linkTable.count)
            dictionary.linkTable.append(link)
            links[traceID + spanID] = index
            return index
        }

        static func bytes(hex: String, count: Int) -> Data? {
            let digits = Array(hex.utf8)
            guard digits.count == count * 2 else { return nil }
            var bytes = Data()
            for index in stride(from: 0, to: digits.count, by: 2) {
                guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
                bytes.append(byte)
            }
            return bytes.contains { $0 != 0 } ? bytes : nil
        }

        mutating func valueType(_ type: String, _ unit: String) -> Otlp_ValueType {
            var value = Otlp_ValueType()
            value.typeStrindex = string(type)
            value.unitStrindex = string(unit)
            return value
        }

        mutating func attribute(_ key: String, _ value: Value, unit: String = "") -> Int32 {
            let identity: String
            switch value {
            case .string(let text): identity = "\(key)\u{0}\(unit)\u{0}s\(text)"
            case .int(let number): identity = "\(key)\u{0}\(unit)\u{0}i\(number)"
            }
            if let known = plainAttributes[identity] { return known }
            let index = attribute(key, OTLPExporter.anyValue(value), unit: unit)
            plainAttributes[identity] = index
            return index
        }

        /// The index of a new attribute.
        mutating func attribute(_ key: String, _ value: Otlp_AnyValue, unit: String = "") -> Int32 {
            var attribute = Otlp_KeyValueAndUnit()
            attribute.keyStrindex = string(key)
            attribute.value = value
            attribute.unitStrindex = unit.isEmpty ? 0 : string(unit)
            let index = Int32(dictionary.attributeTable.count)
            dictionary.attributeTable.append(attribute)
            return index
        }
    }
}
