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
