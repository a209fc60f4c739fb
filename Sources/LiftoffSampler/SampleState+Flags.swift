import CLiftoffSampler
import LiftoffProfile

extension Profile.SampleState {
    /// The state a stored sample's flags say (`LO_SAMPLE_*` in `lo_sampler.h`, set by the signal
    /// handler in `handler.c`): blocked in a system call, runnable (the signal came late), or
    /// running.
    ///
    /// A new state is a flag the handler sets, a case of ``Profile/SampleState`` (its word,
    /// whether it waits) and a line here; every view reads the state from the profile.
    init(sampleFlags flags: UInt32) {
        if flags & LO_SAMPLE_IN_SYSCALL != 0 {
            self = .blocked
        } else if flags & LO_SAMPLE_DISK != 0 {
            self = .disk
        } else if flags & LO_SAMPLE_RUNNABLE != 0 {
            self = .runnable
        } else {
            self = .running
        }
    }
}
