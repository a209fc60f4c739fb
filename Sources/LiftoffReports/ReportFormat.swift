import Foundation
import LiftoffProfile

/// One way to render a profile to a file: what `liftoff report --format` takes, what a report
/// folder holds, and what the fuzz target and the benchmarks run. Every format is listed once,
/// in `ReportFormats.all` (the `LiftoffFormats` module); adding one is a type conforming to this
/// protocol and a line in that list.
public protocol ReportFormat: Sendable {
    /// The name `--format` takes: `html`.
    var name: String { get }
    /// The file it is written to in a report folder: `index.html`.
    var fileName: String { get }
    /// What it is, for `--help`.
    var summary: String { get }
    /// Whether it is binary (not text to show in a terminal).
    var isBinary: Bool { get }
    /// The rendered bytes.
    /// - Throws: when a format cannot be made from this profile (an encoder's failure).
    func render(_ profile: Profile, options: ReportOptions) throws -> Data
}

extension ReportFormat {
    public var isBinary: Bool { false }
}

/// What a rendering may be asked for besides the profile.
public struct ReportOptions: Sendable, Equatable {
    /// For flame graphs and folded stacks: each thread's stacks apart, under a frame named after it.
    public var perThread: Bool
    /// For flame graphs and folded stacks: running samples only (`cpu`), or waiting ones too (`wall`).
    public var samples: Profile.SampleSelection
    /// For OTLP: the `service.name` of the resource; nil names it after the program.
    public var service: String?

    /// Creates options; the defaults are what a report folder holds.
    public init(perThread: Bool = false, samples: Profile.SampleSelection = .cpu, service: String? = nil) {
        self.perThread = perThread
        self.samples = samples
        self.service = service
    }
}

/// The single-page HTML report.
public struct HTMLFormat: ReportFormat {
    public init() {}
    public var name: String { "html" }
    public var fileName: String { "index.html" }
    public var summary: String { "one interactive page: flame graph, timeline, tasks, hangs" }
    public func render(_ profile: Profile, options: ReportOptions) -> Data { Data(HTMLReportRenderer().render(profile).utf8) }
}

/// An SVG flame graph.
public struct SVGFormat: ReportFormat {
    public init() {}
    public var name: String { "svg" }
    public var fileName: String { "flame.svg" }
    public var summary: String { "a flame graph image" }
    public func render(_ profile: Profile, options: ReportOptions) -> Data {
        Data(SVGFlameGraphRenderer(perThread: options.perThread, samples: options.samples).render(profile).utf8)
    }
}

/// Folded stacks.
public struct FoldedFormat: ReportFormat {
    public init() {}
    public var name: String { "folded" }
    public var fileName: String { "flame.folded" }
    public var summary: String { "folded stacks for flamegraph.pl and inferno" }
    public func render(_ profile: Profile, options: ReportOptions) -> Data {
        Data(FoldedRenderer.render(profile, perThread: options.perThread, samples: options.samples).utf8)
    }
}

/// speedscope's file format.
public struct SpeedscopeFormat: ReportFormat {
    public init() {}
    public var name: String { "speedscope" }
    public var fileName: String { "profile.speedscope.json" }
    public var summary: String { "speedscope JSON (speedscope.app)" }
    public func render(_ profile: Profile, options: ReportOptions) -> Data { Data(SpeedscopeRenderer().render(profile).utf8) }
}

/// The Chrome trace event format.
public struct ChromeTraceFormat: ReportFormat {
    public init() {}
    public var name: String { "chrome" }
    public var fileName: String { "trace.json" }
    public var summary: String { "Chrome trace JSON (ui.perfetto.dev, chrome://tracing)" }
    public func render(_ profile: Profile, options: ReportOptions) -> Data { Data(ChromeTraceRenderer().render(profile).utf8) }
}

/// The Markdown summary.
public struct MarkdownFormat: ReportFormat {
    public init() {}
    public var name: String { "markdown" }
    public var fileName: String { "summary.md" }
    public var summary: String { "a summary for a pull-request comment" }
    public func render(_ profile: Profile, options: ReportOptions) -> Data { Data(MarkdownRenderer().render(profile).utf8) }
}
