import Foundation

/// Short names for Swift symbols, as `swift demangle --simplified` writes them:
/// `StretchedHash.absorb(_:)` for `LiftoffDemo.StretchedHash.absorb(Swift.String) -> ()`.
///
/// The Swift runtime's demangler only writes full signatures, so this runs the toolchain's
/// `swift-demangle` once over a batch of mangled names. Without it (a machine with no Swift
/// toolchain), or if it fails, there are no short names and reports show the full ones.
package enum SwiftNameSimplifier {
    /// `swift-demangle` on the `PATH`, or next to the `swift` found there.
    static let tool: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/swift-demangle"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }()

    /// Whether a symbol is a mangled Swift name.
    static func isSwift(_ mangled: String) -> Bool {
        mangled.hasPrefix("$s") || mangled.hasPrefix("_$s") || mangled.hasPrefix("$S") || mangled.hasPrefix("_T0")
    }

    /// The short name of a frame named `full` in `object`, from the simplifier's `simplified`.
    /// The simplifier drops a closure's context when it is a module (top-level code), leaving
    /// `closure #2 in `: the module is put back from the full name.
    static func shortName(_ simplified: String, full: String, object: String) -> String {
        var short = simplified
        if short.hasSuffix(" in "), let context = full.range(of: " in ", options: .backwards) {
            short += full[context.upperBound...]
        }
        return short
    }

    /// The short name of each frame that has a Swift symbol (nil for the others), from one batch.
    package static func shortNames(of frames: [SymbolizedFrame]) -> [String?] {
        let short = simplify(frames.compactMap(\.symbol))
        return frames.map { frame in
            guard let symbol = frame.symbol, let simplified = short[symbol] else { return nil }
            return shortName(simplified, full: frame.name, object: frame.object)
        }
    }

    /// The simplified name of each mangled Swift symbol, or an empty dictionary.
    static func simplify(_ mangled: [String]) -> [String: String] {
        let names = Array(Set(mangled.filter { isSwift($0) && !$0.contains("\n") })).sorted()
        guard let tool, !names.isEmpty else { return [:] }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = ["--simplified"]
        // Liftoff's own helper: under `liftoff profile` the agent does not follow it as the program's child.
        var environment = ProcessInfo.processInfo.environment
        environment["LIFTOFF_AGENT_EXCLUDE"] = "1"
        process.environment = environment
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return [:]
        }
        // Write on another thread: the tool answers line by line and a full output pipe would
        // otherwise stop it while this thread still writes.
        let text = Data((names.joined(separator: "\n") + "\n").utf8)
        let writer = Thread {
            try? input.fileHandleForWriting.write(contentsOf: text)
            try? input.fileHandleForWriting.close()
        }
        writer.start()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return [:] }
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count >= names.count else { return [:] }
        var result: [String: String] = [:]
        for (name, line) in zip(names, lines) where !line.isEmpty && line != Substring(name) {
            result[name] = String(line)
        }
        return result
    }
}
