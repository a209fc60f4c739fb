import LiftoffProfile

extension HTMLReportRenderer {
    /// The header's phase bar: the wrappers (when a program was exec'd), the time before `main`,
    /// the launch to the first frame or ready, and what came after it, each as (name, start, end).
    static func phaseBar(_ profile: Profile, endNs: UInt64) -> [(String, UInt64, UInt64)] {
        let phases = profile.phases
        var bar: [(String, UInt64, UInt64)] = [("pre-main", phases.processStartNs, phases.mainEntryNs)]
        if let exec = phases.programStartNs {
            bar = [("wrappers", phases.processStartNs, exec), ("pre-main", exec, phases.mainEntryNs)]
        }
        let ready = profile.readyName
        if let firstFrame = phases.firstFrameNs {
            bar.append(("launch (main → \(ready))", phases.mainEntryNs, firstFrame))
            bar.append(("after \(ready)", firstFrame, max(endNs, firstFrame)))
        } else {
            bar.append(("after main (no \(ready))", phases.mainEntryNs, max(endNs, phases.mainEntryNs)))
        }
        return bar
    }
}
