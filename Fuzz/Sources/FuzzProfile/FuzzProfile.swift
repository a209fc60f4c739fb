import FuzzDriver
import Foundation
import LiftoffProfile
import LiftoffReports

// A profile either loads or is refused with a ProfileError; one that loads renders in every
// format without trapping.
@main
struct FuzzProfileTarget {
    static func main() {
        FuzzDriver.main { data in
            guard let profile = try? Profile.decode(data, source: "input") else { return }
            _ = FoldedRenderer.render(profile)
            _ = FoldedRenderer.render(profile, perThread: true, samples: .wall)
            _ = MarkdownRenderer().render(profile)
            _ = SVGFlameGraphRenderer().render(profile)
            _ = SpeedscopeRenderer().render(profile)
            _ = ChromeTraceRenderer().render(profile)
            _ = HTMLReportRenderer().render(profile)
            _ = ProfileSummary(profile, limit: 10)
            _ = DiffFlameGraph(base: [profile], head: [profile]).svg(title: "fuzz")
        }
    }
}
