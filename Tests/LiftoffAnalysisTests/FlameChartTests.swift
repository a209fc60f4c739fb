import LiftoffProfile
import LiftoffTestSupport
import Testing

@testable import LiftoffAnalysis

@Suite("Flame chart", .timeLimit(.minutes(5)))
struct FlameChartTests {
    @Test("consecutive samples sharing frames become one bar per frame")
    func bars() {
        let profile = launchProfile()
        let bars = FlameChart.bars(profile, samples: [0, 2, 4, 5], intervalNs: 1_000_000)
        #expect(
            bars == [
                FlameChart.Bar(frame: 0, depth: 0, startNs: 1_000_000, endNs: 5_000_000),
                FlameChart.Bar(frame: 1, depth: 1, startNs: 1_000_000, endNs: 3_000_000),
                FlameChart.Bar(frame: 3, depth: 1, startNs: 3_000_000, endNs: 5_000_000),
            ])
    }

    @Test("a gap of more than two intervals ends every bar one interval after the last sample")
    func gaps() {
        var profile = launchProfile()
        profile.samples = Profile.SampleTable(thread: [1, 1, 1], timeNs: [0, 1_000, 10_000], stack: [1, 1, 1])
        let bars = FlameChart.bars(profile, samples: [0, 1, 2], intervalNs: 1_000)
        #expect(
            bars == [
                FlameChart.Bar(frame: 0, depth: 0, startNs: 0, endNs: 2_000),
                FlameChart.Bar(frame: 0, depth: 0, startNs: 10_000, endNs: 11_000),
                FlameChart.Bar(frame: 1, depth: 1, startNs: 0, endNs: 2_000),
                FlameChart.Bar(frame: 1, depth: 1, startNs: 10_000, endNs: 11_000),
            ])
    }
}
