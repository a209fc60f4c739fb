import LiftoffProfile

/// Small pieces of text several reports share.
enum ReportText {

    /// The last path component of the recorded program, if the profile names one.
    static func programName(_ profile: Profile) -> String? {
        profile.metadata.commandLine.first.map { $0.split(separator: "/").last.map(String.init) ?? $0 }
    }

    /// `12.3 ms` (one decimal).
    static func ms(_ ns: UInt64) -> String { ms(Double(ns) / 1e6) }

    /// `12.3 ms` (one decimal) for a value already in milliseconds.
    static func ms(_ value: Double) -> String { fmt(value, digits: 1, fixed: true) + " ms" }

    /// The name of the thread a task ran on: the profile's name for it when it has one (the
    /// task record keeps the kernel's, which is cut at 15 bytes).
    static func threadName(of task: Profile.TaskRecord, in profile: Profile) -> String {
        if let id = task.threadID, let thread = profile.thread(withID: id) { return thread.name }
        return task.threadName ?? task.threadID.map { "thread \($0)" } ?? ""
    }

    /// `1 sample` / `3 samples`.
    static func count(_ value: Int, _ noun: String) -> String { value == 1 ? "1 \(noun)" : "\(value) \(noun)s" }
}
