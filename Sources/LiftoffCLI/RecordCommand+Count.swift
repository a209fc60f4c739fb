import ArgumentParser
import Foundation
import Glibc
import LiftoffComparison
import LiftoffProfile
import LiftoffSampler

/// What `liftoff record --count` counts.
enum CountKind: String, ExpressibleByArgument, CaseIterable {
    /// Instructions executed, by valgrind's callgrind.
    case instructions
}

extension RecordCommand {
    /// The environment every counted run gets, the same on both sides: hashing that does not
    /// change from run to run. No agent and no sampler run under the count.
    static let countEnvironment = ["SWIFT_DETERMINISTIC_HASHING": "1", ProfileRecorder.countedVariable: "1"]

    /// `valgrind` on the PATH.
    static func valgrind() throws -> String {
        if let valgrind = ExecutableSearch.find("valgrind") { return valgrind }
        throw CLIError("--count instructions runs each launch under valgrind's callgrind, and valgrind is not on the PATH (apt-get install valgrind).")
    }

    /// Launches each side `countRuns` times under callgrind, interleaved, and keeps each run's
    /// counts in `counts/` beside its runs and in the manifest.
    func recordCounts(_ sides: [Side], pattern: NSRegularExpression?, progress: Progress) throws {
        let valgrind = try Self.valgrind()
        for side in sides {
            try FileManager.default.createDirectory(
                at: side.folder.appendingPathComponent("counts"), withIntermediateDirectories: true)
        }
        rounds: for round in 0..<countRuns {
            for side in order(sides, round: round) {
                if ProcessRunner.interruption != 0 { break rounds }
                let index = (side.manifest.counted?.count ?? 0) + 1
                progress.note("counting instructions \(index)/\(countRuns)\(side.label) (valgrind runs it 20–150× slower)")
                let run = try countRun(side, index: index, valgrind: valgrind, pattern: pattern)
                side.manifest.counted = (side.manifest.counted ?? []) + [run]
                let shown = run.instructions.map { "\(RecordCommand.millions($0)) instructions" } ?? "failed: \(run.outcome)"
                progress.note("counted \(index)/\(countRuns)\(side.label): \(shown)")
            }
        }
        for side in sides where side.manifest.counted?.contains(where: \.strippedCopy) == true {
            // Said even with --quiet: the counts stand, but their functions have no file or line.
            FileHandle.standardError.write(
                Data(("valgrind cannot read the debug information of \(side.command[0]) (DWARF 5), so a copy without it was "
                    + "counted: the same instructions, functions named from its symbol table, without file or line.\n").utf8))
        }
    }

    /// `20.3 M`.
    static func millions(_ count: UInt64) -> String { String(format: "%.2f M", Double(count) / 1e6) }

    /// One counted launch: its callgrind files, and their count to the ready point.
    private func countRun(_ side: Side, index: Int, valgrind: String, pattern: NSRegularExpression?) throws -> RecordManifest.CountedRun {
        let stem = String(format: "counts/run-%03d", index)
        // One output per process (`%p`): a wrapper (`sh -c 'exec app'`, `env`) is followed
        // through its exec, and what the program's own pid wrote is its count.
        let output = side.folder.appendingPathComponent(stem + ".callgrind")
        let log = side.folder.appendingPathComponent(stem + ".log")
        var stripped: String?
        defer { if let stripped { unlink(stripped) } }
        for attempt in 0..<2 {
            Self.removeOutputs(of: output)
            var command = side.command
            if attempt == 1 {
                // valgrind 3.19 gives up on DWARF 5 (clang's, Swift's with -dwarf-version=5): count a
                // copy without debug sections, beside the original so that $ORIGIN paths still resolve.
                guard let copy = Self.strippedCopy(of: side.command[0]) else { break }
                stripped = copy
                command[0] = copy
            }
            let arguments = [
                valgrind, "--tool=callgrind", "--callgrind-out-file=\(output.path).%p", "--trace-children=yes", "--fair-sched=yes",
                "--dump-instr=no", "--separate-recs=1", "--dump-after=lo_launch_ready", "--",
            ] + command
            var environment = ProcessInfo.processInfo.environment.merging(Self.countEnvironment) { _, counted in counted }
            environment["LD_PRELOAD"] = Self.countPreload()
            var runner = ProcessRunner(
                arguments: arguments, environment: environment, log: log, ready: pattern,
                timeoutSeconds: max(watch.timeout, 1) * 200, readyStreams: watch.readyStream)
            // A ready line: callgrind dumps its counts there, before the program is stopped.
            runner.onReady = { pid in Self.dumpCounts(pid) }
            let result = try runner.run()
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if attempt == 0, text.contains("Possibly corrupted debuginfo") || text.contains("unhandled dwarf2 abbrev form code") && !result.outcome.succeeded {
                continue
            }
            if text.contains("the 'impossible' happened") || text.contains("VALGRIND INTERNAL ERROR") {
                return RecordManifest.CountedRun(
                    index: index, file: nil, instructions: nil, outcome: "valgrind could not run it (its own error; see \(stem).log)",
                    strippedCopy: stripped != nil, trigger: nil)
            }
            guard result.outcome.succeeded else {
                return RecordManifest.CountedRun(
                    index: index, file: nil, instructions: nil, outcome: result.outcome.description, strippedCopy: stripped != nil,
                    trigger: nil)
            }
            do {
                let own = output.deletingLastPathComponent().appendingPathComponent(output.lastPathComponent + ".\(result.pid)")
                let counts = try CallgrindCounts.read(files: CallgrindCounts.parts(of: own))
                return RecordManifest.CountedRun(
                    index: index, file: stem + ".callgrind.\(result.pid)", instructions: counts.instructions,
                    outcome: result.outcome.description,
                    strippedCopy: stripped != nil, trigger: counts.trigger)
            } catch let error as CallgrindCounts.ReadError {
                return RecordManifest.CountedRun(
                    index: index, file: nil, instructions: nil, outcome: "its counts are unreadable: \(error.description)",
                    strippedCopy: stripped != nil, trigger: nil)
            }
        }
        return RecordManifest.CountedRun(
            index: index, file: nil, instructions: nil,
            outcome: "valgrind cannot read its debug information (DWARF 5), and no copy without it could be made (objcopy)",
            strippedCopy: false, trigger: nil)
    }

    /// The library preloaded into counted launches, beside the agent (`libLiftoffCount.so`):
    /// without it, valgrind 3.19 dies in any program that calls dispatch_main (every Swift
    /// program with an async main). Nil when it is not there; the launch is counted without it.
    static func countPreload() -> String? {
        let agent = (try? ProfileCommand.agentLibrary()) ?? ProfileCommand.agentLocations()[0]
        let path = URL(fileURLWithPath: agent).deletingLastPathComponent().appendingPathComponent("libLiftoffCount.so").path
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    /// Asks callgrind in `pid` to dump its counts now (`callgrind_control --dump=ready`).
    static func dumpCounts(_ pid: pid_t) {
        let control = Process()
        control.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        control.arguments = ["callgrind_control", "--dump=ready", String(pid)]
        control.standardOutput = FileHandle.nullDevice
        control.standardError = FileHandle.nullDevice
        guard (try? control.run()) != nil else { return }
        control.waitUntilExit()
    }

    /// Removes what an earlier count left at `file` (every process's output and dumps).
    static func removeOutputs(of file: URL) {
        let folder = file.deletingLastPathComponent()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        where name.hasPrefix(file.lastPathComponent + ".") {
            unlink(folder.appendingPathComponent(name).path)
        }
    }

    /// A copy of `program` (a path, or a name on the PATH) without debug sections, beside it;
    /// nil when objcopy fails or the folder is not writable.
    static func strippedCopy(of program: String) -> String? {
        guard let path = ExecutableSearch.find(program) else { return nil }
        let copy = path + ".liftoff-nodebug"
        let objcopy = Process()
        objcopy.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        objcopy.arguments = ["objcopy", "--strip-debug", path, copy]
        objcopy.standardOutput = FileHandle.nullDevice
        objcopy.standardError = FileHandle.nullDevice
        guard (try? objcopy.run()) != nil else { return nil }
        objcopy.waitUntilExit()
        guard objcopy.terminationStatus == 0 else {
            unlink(copy)
            return nil
        }
        return copy
    }
}
