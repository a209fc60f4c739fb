@_exported import LiftoffReports
import LiftoffPprof

/// Every report format, in the order a report folder lists them: the one list the command line,
/// the fuzz target and the benchmarks read. A new format is a ``ReportFormat`` and a line here.
public enum ReportFormats {
    /// Every format.
    public static let all: [any ReportFormat] = [
        HTMLFormat(),
        SVGFormat(),
        FoldedFormat(),
        SpeedscopeFormat(),
        ChromeTraceFormat(),
        MarkdownFormat(),
        PprofFormat(),
        OTLPFormat(),
    ]

    /// The format `--format` calls `name`, if there is one.
    public static func named(_ name: String) -> (any ReportFormat)? {
        all.first { $0.name == name }
    }
}
