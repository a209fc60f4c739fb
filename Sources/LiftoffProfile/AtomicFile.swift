import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes files so that a reader sees either the previous file or the complete new one,
/// never a partial write: the bytes go to a temporary file in the same folder, are synced,
/// and the temporary file is renamed over the target.
public enum AtomicFile {
    /// Writes `data` to `url` atomically, creating missing parent folders.
    /// - Parameter durable: sync the bytes to the disk before the rename, so that the file
    ///   also survives a power loss; without it, the write is still atomic for every reader
    ///   and survives the writer crashing, and costs no disk flush.
    /// - Throws: ``ProfileError`` with code `unwritable` and a sentence naming the path.
    public static func write(_ data: Data, to url: URL, durable: Bool = true) throws {
        var target = stat()
        if lstat(url.path, &target) == 0 && target.st_mode & S_IFMT != S_IFREG {
            // Renaming over a device, folder or link would replace it, not write to it.
            throw ProfileError(.unwritable, "Cannot write \(url.path): it is not a regular file.", value: url.path)
        }
        let directory = url.deletingLastPathComponent()
        try createFolder(directory)
        var template = Array(directory.appendingPathComponent(".\(url.lastPathComponent).XXXXXX").path.utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else {
            throw ProfileError(
                .unwritable, "Cannot write to the folder \(directory.path): \(reason(errno)).", value: directory.path)
        }
        let temporaryPath = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var failure: Int32 = 0
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += written
            }
        }
        if failure == 0 && durable && fsync(fd) != 0 { failure = errno }
        fchmod(fd, 0o644)
        if close(fd) != 0 && failure == 0 { failure = errno }
        if failure == 0 && rename(temporaryPath, url.path) != 0 { failure = errno }
        guard failure == 0 else {
            unlink(temporaryPath)
            throw ProfileError(.unwritable, "Cannot write \(url.path): \(reason(failure)).", value: url.path)
        }
    }

    /// Creates `folder` and any missing parents.
    /// - Throws: ``ProfileError`` with code `unwritable` and a sentence saying why, naming the
    ///   part of the path that is a file when one is in the way.
    public static func createFolder(_ folder: URL) throws {
        let path = folder.standardizedFileURL.path
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o755) == 0 { continue }
            let code = errno
            var existing = stat()
            if code == EEXIST && stat(prefix, &existing) == 0 {
                if existing.st_mode & S_IFMT == S_IFDIR { continue }
                throw ProfileError(
                    .unwritable, "Cannot create the folder \(path): \(prefix) is a file, not a folder.", value: path)
            }
            throw ProfileError(.unwritable, "Cannot create the folder \(path): \(reason(code)).", value: path)
        }
    }

    /// The C library's sentence for `code`, lower-cased to sit inside one of ours.
    static func reason(_ code: Int32) -> String {
        let text = String(cString: strerror(code))
        return text.prefix(1).lowercased() + text.dropFirst()
    }

    /// Writes `text` as UTF-8 to `url` atomically.
    /// - Throws: ``ProfileError`` with code `unwritable`.
    public static func write(_ text: String, to url: URL, durable: Bool = true) throws {
        try write(Data(text.utf8), to: url, durable: durable)
    }
}
