import FuzzDriver
import Foundation
import LiftoffFormats
import LiftoffProfile

// A profile either loads or is refused with a ProfileError; one that loads renders in every
// format without trapping.
@main
struct FuzzProfileTarget {
    static func main() {
        FuzzDriver.main { data in
            guard let profile = try? Profile.decode(data, source: "input") else { return }
            // Every format there is, from the one list, with each option.
            for format in ReportFormats.all {
                _ = try? format.render(profile, options: ReportOptions())
                _ = try? format.render(profile, options: ReportOptions(perThread: true, samples: .wall))
            }
            _ = ProfileSummary(profile, limit: 10)
            _ = DiffFlameGraph(base: [profile], head: [profile]).svg(title: "fuzz")
        }
    }
}
