import LiftoffProfile

/// The end-of-iteration display pass: draws the key window's views that need it, commits a
/// frame when anything was drawn (or the first frame, once the window has content), paces an
/// animation at the refresh interval, and records the first layout, draw and frame.
///
/// The ``Application`` owns one and runs it as a run-loop observer on the main thread.
// `@unchecked`: like the application, it is used on the main thread only; its timer runs there.
final class DisplayPass: @unchecked Sendable {
    private unowned let application: Application
    /// Frames committed so far.
    private(set) var frameCount = 0
    /// Clock time of the first frame's commit.
    private(set) var firstFrameNs: UInt64?
    /// Each committed frame's duration: from the start of the run-loop iteration that produced
    /// it to its commit.
    private(set) var frameDurationsNs: [UInt64] = []
    private var firstLayoutDone = false
    private var firstFrameWaiters: [() -> Void] = []
    private var lastCommitNs: UInt64?
    private var vsyncTimer: Int?

    init(application: Application) {
        self.application = application
    }

    /// Runs `body` after the first frame: now when it has been committed, else right after it.
    func afterFirstFrame(_ body: @escaping () -> Void) {
        if firstFrameNs != nil {
            nonisolated(unsafe) let run = body
            application.runLoop.post("after first frame") { run() }
        } else {
            firstFrameWaiters.append(body)
        }
    }

    /// One pass, at the end of a run-loop iteration.
    func run(_ loop: MainRunLoop) {
        guard let window = application.displayedWindow else { return }
        let recorder = application.configuration.recorder
        let start = loop.iterationStartNs
        if !firstLayoutDone {
            firstLayoutDone = true
            recorder?.mark(.firstLayout)
        }
        // While an animation runs, frames come at the refresh interval, not at every iteration.
        if vsyncTimer != nil, let last = lastCommitNs,
            NanosecondDuration.between(last, loop.clock.nowNs).nanoseconds < Application.frameIntervalNs
        {
            return
        }
        let drawn = window.displayIfNeeded()
        if drawn > 0 && frameCount == 0 { recorder?.mark(.firstDraw) }
        let firstPending = firstFrameNs == nil && window.hasContent
        guard drawn > 0 || firstPending else { return }
        let index = frameCount
        frameCount += 1
        if firstFrameNs == nil {
            let now = loop.clock.nowNs
            firstFrameNs = now
            application.firstFrameCommitted(at: now)
        }
        loop.note("commit frame \(index)")
        let commit = loop.clock.nowNs
        lastCommitNs = commit
        frameDurationsNs.append(NanosecondDuration.between(start, commit).nanoseconds)
        recorder?.recordFrame(index: index, iterationStartNs: start, viewsDrawn: drawn)
        application.emit(.frame(index: index, viewsDrawn: drawn))
        if index == 0 {
            let waiters = firstFrameWaiters
            firstFrameWaiters = []
            for waiter in waiters { waiter() }
        }
        // Views that marked themselves again while drawing (an animation) keep the display
        // going at 60 Hz: the next frame comes one refresh interval after this one.
        if window.subtreeNeedsDisplay, vsyncTimer == nil {
            vsyncTimer = loop.schedule(afterNanoseconds: Application.frameIntervalNs, name: "vsync") { [unowned self] in
                self.vsyncTimer = nil
            }
        }
    }
}
