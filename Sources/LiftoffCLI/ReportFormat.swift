import ArgumentParser
import Foundation
import LiftoffFormats
import LiftoffProfile

/// `--format`'s value: one of ``ReportFormats/all``, by its name.
struct FormatChoice: ExpressibleByArgument {
    let format: any ReportFormat

    init(_ format: any ReportFormat) { self.format = format }

    init?(argument: String) {
        guard let format = ReportFormats.named(argument) else { return nil }
        self.format = format
    }

    static var allValueStrings: [String] { ReportFormats.all.map(\.name) }
    var defaultValueDescription: String { format.name }
}

extension ReportFormats {
    /// The bytes of `format` for `profile`.
    /// - Throws: `CLIError` with one sentence when the format cannot be made.
    static func output(_ format: any ReportFormat, _ profile: Profile, options: ReportOptions = ReportOptions()) throws -> Data {
        do {
            return try format.render(profile, options: options)
        } catch {
            throw CLIError("The \(format.name) file could not be made: \(error).")
        }
    }

    /// Every file a report folder holds next to profile.json: each format, plus the folded
    /// stacks kept apart per thread, of running and of all samples.
    static func folderFiles(_ profile: Profile) throws -> [(name: String, data: Data)] {
        try all.map { ($0.fileName, try output($0, profile)) }
            + [
                ("flame-per-thread.folded", try output(FoldedFormat(), profile, options: ReportOptions(perThread: true))),
                ("flame-wall.folded", try output(FoldedFormat(), profile, options: ReportOptions(perThread: true, samples: .wall))),
            ]
    }
}

extension Profile.SampleSelection: ExpressibleByArgument {
    /// `cpu` or `wall`, for `--samples`.
    public static var allValueStrings: [String] { allCases.map(\.rawValue) }
}
