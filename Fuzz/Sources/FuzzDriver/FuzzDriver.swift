import Foundation

#if canImport(Glibc)
import Glibc
#endif

#if FUZZING
@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// libFuzzer's own `main`, linked whole, refers to this entry; the target's Swift `main` runs
/// instead (SwiftPM points `main` at it) and hands libFuzzer the same check.
@_cdecl("LLVMFuzzerTestOneInput")
public func llvmFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    FuzzDriver.run(data, size)
}
#endif

/// Runs one fuzz target's check: under libFuzzer (built with `-DFUZZING`) on generated inputs,
/// otherwise on each file named on the command line (or in a folder named there), so a corpus
/// replays in any build. A check that traps is the finding.
public enum FuzzDriver {
    nonisolated(unsafe) private static var check: ((Data) -> Void)?

    /// Runs the check on one generated input.
    static func run(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
        let input = data.map { Data(bytes: $0, count: size) } ?? Data()
        check?(input)
        return 0
    }

    /// Hands control to libFuzzer, or replays the files in `CommandLine.arguments`; exits.
    public static func main(_ body: @escaping (Data) -> Void) -> Never {
        check = body
        #if FUZZING
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        let status = runDriver(&argc, &argv) { data, size in FuzzDriver.run(data, size) }
        exit(status)
        #else
        var replayed = 0
        for path in CommandLine.arguments.dropFirst() where !path.hasPrefix("-") {
            let url = URL(fileURLWithPath: path)
            let files =
                (try? FileManager.default.contentsOfDirectory(at: url, includingPropertiesForKeys: nil))?.sorted {
                    $0.path < $1.path
                } ?? [url]
            for file in files {
                guard let data = try? Data(contentsOf: file) else {
                    FileHandle.standardError.write(Data("fuzz: cannot read \(file.path)\n".utf8))
                    exit(1)
                }
                body(data)
                replayed += 1
            }
        }
        print("replayed \(replayed) input\(replayed == 1 ? "" : "s")")
        exit(0)
        #endif
    }
}
