import ArgumentParser
import LiftoffProfile
import LiftoffReports

/// The formats `liftoff report` writes.
enum ReportFormat: String, CaseIterable, ExpressibleByArgument {
    case folded
    case svg

    /// The file name `liftoff demo` gives this format.
    var demoFileName: String {
        switch self {
        case .folded: return "flame.folded"
        case .svg: return "flame.svg"
        }
    }

    func render(_ profile: Profile, perThread: Bool) -> String {
        switch self {
        case .folded: return FoldedRenderer.render(profile, perThread: perThread)
        case .svg: return SVGFlameGraphRenderer(perThread: perThread).render(profile)
        }
    }
}
