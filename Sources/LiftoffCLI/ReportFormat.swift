import ArgumentParser
import Foundation
import LiftoffPprof
import LiftoffProfile
import LiftoffReports

/// The formats `liftoff report` writes.
enum ReportFormat: String, CaseIterable, ExpressibleByArgument {
    case html
    case svg
    case folded
    case speedscope
    case chrome
    case markdown
    case pprof

    /// What the format is, for `--help`.
    var summary: String {
        switch self {
        case .html: return "one interactive page: flame graph, timeline, tasks, hangs"
        case .svg: return "a flame graph image"
        case .folded: return "folded stacks for flamegraph.pl and inferno"
        case .speedscope: return "speedscope JSON (speedscope.app)"
        case .chrome: return "Chrome trace JSON (ui.perfetto.dev, chrome://tracing)"
        case .markdown: return "a summary for a pull-request comment"
        case .pprof: return "gzip-compressed pprof protobuf (go tool pprof, Pyroscope, Parca)"
        }
    }

    /// The file name `liftoff demo` gives this format.
    var demoFileName: String {
        switch self {
        case .html: return "index.html"
        case .svg: return "flame.svg"
        case .folded: return "flame.folded"
        case .speedscope: return "profile.speedscope.json"
        case .chrome: return "trace.json"
        case .markdown: return "summary.md"
        case .pprof: return "profile.pb.gz"
        }
    }

    /// Whether the format is binary (not text to show in a terminal).
    var isBinary: Bool { self == .pprof }

    /// The format's bytes.
    /// - Throws: `CLIError` when a binary format cannot be made.
    func output(_ profile: Profile, perThread: Bool, samples: Profile.SampleSelection = .cpu) throws -> Data {
        guard self == .pprof else { return Data(render(profile, perThread: perThread, samples: samples).utf8) }
        do {
            return try PprofExporter.data(profile)
        } catch {
            throw CLIError("The pprof file could not be made: \(error).")
        }
    }

    /// The text of a text format (empty for pprof, which is binary: see ``output(_:perThread:samples:)``).
    func render(_ profile: Profile, perThread: Bool, samples: Profile.SampleSelection = .cpu) -> String {
        switch self {
        case .pprof: return ""
        case .html: return HTMLReportRenderer().render(profile)
        case .svg: return SVGFlameGraphRenderer(perThread: perThread, samples: samples).render(profile)
        case .folded: return FoldedRenderer.render(profile, perThread: perThread, samples: samples)
        case .speedscope: return SpeedscopeRenderer().render(profile)
        case .chrome: return ChromeTraceRenderer().render(profile)
        case .markdown: return MarkdownRenderer().render(profile)
        }
    }

    /// Every file `liftoff demo` writes next to profile.json: each format, plus the folded
    /// stacks kept apart per thread.
    static func demoFiles(_ profile: Profile) throws -> [(name: String, data: Data)] {
        try allCases.map { ($0.demoFileName, try $0.output(profile, perThread: false)) }
            + [
                ("flame-per-thread.folded", Data(FoldedRenderer.render(profile, perThread: true).utf8)),
                ("flame-wall.folded", Data(FoldedRenderer.render(profile, perThread: true, samples: .wall).utf8)),
            ]
    }
}

extension Profile.SampleSelection: ExpressibleByArgument {
    /// `cpu` or `wall`, for `--samples`.
    public static var allValueStrings: [String] { allCases.map(\.rawValue) }
}
