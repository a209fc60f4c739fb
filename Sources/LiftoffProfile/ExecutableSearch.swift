import Foundation

/// The file a command runs, found as a shell finds it.
public enum ExecutableSearch {
    /// The search path when `PATH` is not set.
    public static let defaultPath = "/usr/local/bin:/usr/bin:/bin"

    /// `command` itself when it has a slash, else the first executable file of that name in the
    /// directories of `path` (this process's `PATH` unless given); nil for an empty command or none found.
    public static func find(_ command: String, path: String? = ProcessInfo.processInfo.environment["PATH"]) -> String? {
        guard !command.isEmpty else { return nil }
        if command.contains("/") { return command }
        for directory in (path ?? defaultPath).split(separator: ":") {
            let candidate = "\(directory)/\(command)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
