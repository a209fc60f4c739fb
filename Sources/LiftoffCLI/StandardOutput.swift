import ArgumentParser
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Standard output, written with `write(2)` so that a failed write is seen: a full disk or a
/// broken terminal ends the command with one sentence and exit 1; a reader that closed the pipe
/// (`liftoff report … | head`) ends it quietly with exit 0, as it wanted no more.
enum StandardOutput {
    /// Writes `text` whole.
    /// - Throws: `CLIError` when standard output cannot be written, or `ExitCode.success` when
    ///   its reader has gone.
    static func write(_ text: String) throws {
        try write(Data(text.utf8))
    }

    /// Writes `data` whole.
    /// - Throws: as ``write(_:)-(String)`` does.
    static func write(_ data: Data) throws {
        var bytes = [UInt8](data)
        if bytes.isEmpty { return }
        try bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(1, buffer.baseAddress! + offset, buffer.count - offset)
                if written > 0 {
                    offset += written
                    continue
                }
                if written < 0 && errno == EINTR { continue }
                if written < 0 && errno == EPIPE { throw ExitCode.success }
                let reason = written < 0 ? String(cString: strerror(errno)) : "nothing was written"
                throw CLIError("Cannot write to standard output: \(reason).")
            }
        }
    }

    /// Writes `count` bytes to descriptor `fd` whole: whether they were (a closed pipe or a full
    /// disk is false).
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Bool {
        var offset = 0
        while offset < count {
            let written = Glibc.write(fd, bytes + offset, count - offset)
            if written > 0 {
                offset += written
            } else if !(written < 0 && errno == EINTR) {
                return false
            }
        }
        return true
    }

    /// Writes `line` and a newline.
    static func print(_ line: String) throws {
        try write(line + "\n")
    }

    /// Makes a closed pipe a write error (EPIPE) rather than a signal that kills the process, so
    /// that `write` can end the command quietly.
    static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }
}
