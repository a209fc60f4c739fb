import Foundation
import LiftoffProfile
import LiftoffReports

/// pprof's gzip-compressed protobuf, as a report format.
public struct PprofFormat: ReportFormat {
    public init() {}
    public var name: String { "pprof" }
    public var fileName: String { "profile.pb.gz" }
    public var summary: String { "gzip-compressed pprof protobuf (go tool pprof, Pyroscope, Parca)" }
    public var isBinary: Bool { true }
    public func render(_ profile: Profile, options: ReportOptions) throws -> Data { try PprofExporter.data(profile) }
}

/// An OpenTelemetry profiles request (OTLP/HTTP protobuf), as a report format.
public struct OTLPFormat: ReportFormat {
    public init() {}
    public var name: String { "otlp" }
    public var fileName: String { "profile.otlp.pb" }
    public var summary: String { "an OpenTelemetry profiles request (OTLP/HTTP protobuf: Collector, Pyroscope, Parca)" }
    public var isBinary: Bool { true }
    public func render(_ profile: Profile, options: ReportOptions) throws -> Data {
        try OTLPExporter.data(profile, service: options.service)
    }
}
