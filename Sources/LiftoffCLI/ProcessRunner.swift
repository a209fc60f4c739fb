
#if canImport(Glibc)
import CLiftoffProcess
import Foundation
import Glibc
import LiftoffComparison
import LiftoffProfile
import LiftoffSampler
import Synchronization
#endif

/// Runs one program to completion (forked by `lo_spawn` into a process group of its own), timing
/// it on the monotonic clock.
///
/// The child's standard output and error go to a log file, and also to this process's own
/// with `passesOutputThrough`. With a `ready` pattern, the watched streams (both by default) are
/// read line by line, in linear time, and still copied; the time of the first matching line is
/// kept. The run lasts until the child and every process it started in its group have ended: a
/// tree that outlives `timeout` is sent SIGTERM, then SIGKILL 5 s later (`stopGraceNs`), as is a program stopped at its ready line.
struct ProcessRunner {
    /// What one run measured.
    struct Result {
        var outcome: Outcome
        /// The child's process id.
        var pid: Int32 = 0
        /// `CLOCK_MONOTONIC` when the child was spawned.
        var spawnNs: UInt64
        /// Nanoseconds from spawn to the end of the last process of the child's tree.
        var exitNs: UInt64
        /// Nanoseconds from spawn to the first output line matching the ready pattern.
        var readyNs: UInt64?
        /// What the program spent by the kernel's counts: when it was ready, else when it exited.
        var counters: RunCounters?
        /// Processes that left the program's process group (daemons) and were still running when
        /// the run ended: stopped with SIGTERM, given time to write, then killed. `name (pid)`.
        var stoppedDaemons: [String] = []
        /// With `recordsDiskFaults`: the kernel's records of the run's page faults that read from
        /// storage, in time order, or why it refused to record them.
        var diskFaults: Swift.Result<[DiskFaultRecords.Timed], DiskFaultRecords.Refusal>?
    }

    var arguments: [String]
    var environment: [String: String]
    var log: URL
    var ready: NSRegularExpression?
    var timeoutSeconds: Double
    /// The output streams `ready` is looked for in.
    var readyStreams: ReadyStreams = .both
    /// Whether the child's output also goes to this process's standard output and error.
    var passesOutputThrough = false
    /// Seconds after which the program is stopped (SIGTERM, then the same grace as a ready
    /// server); nil: it runs until it ends, is ready or times out.
    var durationSeconds: Double?
    /// Whether a process that leaves the program's process group (a daemon) is waited for, like
    /// the program: to its end, its ready line or the timeout.
    var followsDaemons = false
    /// Called with the program's pid when its ready line appears, before it is stopped (to have
    /// a counting tool dump its counts there).
    var onReady: ((pid_t) -> Void)?
    /// Whether the kernel records the page faults of the program and what it starts that read
    /// from storage (a major-fault event opened on the child before its exec).
    var recordsDiskFaults = false

    /// Spawns the program and waits for it.
    /// - Parameter launchVariable: an environment variable to set to the spawn time (monotonic
    ///   nanoseconds), so that the program can measure its pre-main time.
    /// - Throws: `CLIError` when it cannot be started.
    func run(launchVariable: String? = nil) throws -> Result {
        guard let program = arguments.first else { throw CLIError("No command to run was given.") }
        if let name = ProcessRunner.signalName(ProcessRunner.interruption) {
            throw CLIError("Interrupted by \(name) before \(program) started.")
        }
        let logFD = open(log.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard logFD >= 0 else { throw CLIError("Cannot write the run log \(log.path): \(String(cString: strerror(errno))).") }
        defer { close(logFD) }
        // A pipe for each watched stream (1 standard output, 2 standard error); the others go
        // straight to the log.
        let watched = passesOutputThrough ? [1, 2] : ready == nil ? [] : readyStreams.descriptors
        var pipes: [(child: Int32, read: Int32, write: Int32)] = []
        defer { for pipe in pipes { close(pipe.read) } }
        for child in watched {
            var ends: [Int32] = [-1, -1]
            guard pipe(&ends) == 0 else {
                let reason = String(cString: strerror(errno))
                for pipe in pipes { close(pipe.write) }
                throw CLIError("Cannot create a pipe: \(reason).")
            }
            // Neither end may leak into other children; the spawn's dup2 gives this one its copy.
            _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
            pipes.append((child, ends[0], ends[1]))
        }
        let argv = arguments.map { strdup($0) } + [nil]
        var envp = environment.filter { $0.key != launchVariable }.map { strdup("\($0.key)=\($0.value)") }
        var startedNs = MonotonicClock.nowNs
        if let launchVariable { envp.append(strdup("\(launchVariable)=\(startedNs)")) }
        let stampIndex = launchVariable == nil ? -1 : Int32(envp.count - 1)
        let stamped = startedNs
        envp.append(nil)
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        // The child leads its own process group, so the end of a run stops everything it
        // started, and it is killed if this thread ends first (`liftoff record` killed).
        let output = pipes.first { $0.child == 1 }?.write ?? logFD
        let errors = pipes.first { $0.child == 2 }?.write ?? logFD
        var faults: OpaquePointer?
        var faultsError: Int32 = 0
        let pid = argv.withUnsafeBufferPointer { arguments in
            envp.withUnsafeBufferPointer { environment in
                recordsDiskFaults
                    ? lo_spawn_recording_faults(
                        arguments.baseAddress, environment.baseAddress, output, errors, &faults, &faultsError, stampIndex, stamped, &startedNs)
                    : lo_spawn(arguments.baseAddress, environment.baseAddress, output, errors)
            }
        }
        let spawnError = errno
        let spawnNs = startedNs
        defer { lo_faults_close(faults) }
        // Drained as the run goes, so that a long run does not fill the rings.
        var faultBytes: [UInt8] = []
        var faultChunk: [UInt8] = []
        func drainFaults() {
            if let faults { DiskFaultRecords.read(faults, into: &faultBytes, through: &faultChunk) }
        }
        for pipe in pipes { close(pipe.write) }
        guard pid > 0 else {
            throw CLIError("Cannot start \(program): \(String(cString: strerror(spawnError))).")
        }
        runningChildGroup.store(pid, ordering: .sequentiallyConsistent)
        defer { runningChildGroup.store(0, ordering: .sequentiallyConsistent) }

        let readyTime = ReadyWatch()
        if !pipes.isEmpty {
            // The reader's own descriptors: it may outlive this call.
            let streams = pipes.map { pipe in
                var stream = WatchedStream(
                    fd: dup(pipe.read), echo: passesOutputThrough ? pipe.child : nil,
                    pattern: readyStreams.descriptors.contains(pipe.child) ? ready : nil)
                stream.child = pipe.child
                return stream
            }
            let readerLog = dup(logFD)
            readyTime.expectReader()
            Thread {
                ProcessRunner.watchOutputs(streams, log: readerLog, spawnNs: spawnNs, found: readyTime)
                for stream in streams { close(stream.fd) }
                close(readerLog)
            }.start()
        }
        // Wait for the exit on a pidfd (no thread per run), waking every 10 ms to stop a program
        // that printed its ready line and to enforce the timeout.
        let pidfd = lo_pidfd_open(pid)
        defer { if pidfd >= 0 { close(pidfd) } }
        let deadline = spawnNs &+ UInt64(min(timeoutSeconds, 1e6) * 1e9)
        let stopAt = durationSeconds.map { spawnNs &+ UInt64(min($0, 1e6) * 1e9) }
        // Why the run is stopped, once it is, and since when.
        var stop: Stop?
        var stoppedAt: UInt64?
        func stopDue(_ now: UInt64) -> Stop? {
            if interruptSignal.load(ordering: .sequentiallyConsistent) != 0 { return .interrupted }
            if now > deadline { return .timedOut }
            // A server keeps running once it is ready: its launch is over.
            if readyTime.value != nil { return .ready }
            if let stopAt, now > stopAt { return .duration }
            return nil
        }
        var killed = false
        var counters: RunCounters?
        while !ProcessRunner.hasExited(pid, pidfd: pidfd, waitingMs: 10) {
            drainFaults()
            let now = MonotonicClock.nowNs
            if stop != .interrupted && interruptSignal.load(ordering: .sequentiallyConsistent) != 0 {
                // The handler handed the signal on to the program's group: give it time to write.
                stop = .interrupted
                stoppedAt = now
            } else if let stopped = stoppedAt {
                if !killed && now - stopped > ProcessRunner.stopGraceNs {
                    kill(-pid, SIGKILL)
                    killed = true
                }
            } else if let due = stopDue(now) {
                stop = due
                stoppedAt = now
                // A server's counts end at its ready line, before it is stopped.
                if due == .ready {
                    counters = RunCounters.read(pid: pid)
                    onReady?(pid)
                }
                kill(-pid, SIGTERM)
            }
        }
        // Exited: its I/O counts are read before it is reaped; faults, CPU and switches come with
        // the reaping (in microseconds, and with the processes it waited for).
        var exited = siginfo_t()
        var waited: Int32 = -1
        repeat { waited = waitid(P_PID, id_t(pid), &exited, WEXITED | WNOWAIT) } while waited < 0 && errno == EINTR
        let beforeReaping = counters == nil && waited == 0 ? RunCounters.read(pid: pid) : nil
        var code: Int32 = 0
        var reaped: pid_t = -1
        var usage = rusage()
        repeat { reaped = wait4(pid, &code, 0, &usage) } while reaped < 0 && errno == EINTR
        if var exitCounters = beforeReaping, reaped == pid {
            exitCounters.minorFaults = UInt64(max(usage.ru_minflt, 0))
            exitCounters.majorFaults = UInt64(max(usage.ru_majflt, 0))
            exitCounters.userCPUMs = Double(usage.ru_utime.tv_sec) * 1000 + Double(usage.ru_utime.tv_usec) / 1000
            exitCounters.systemCPUMs = Double(usage.ru_stime.tv_sec) * 1000 + Double(usage.ru_stime.tv_usec) / 1000
            exitCounters.voluntarySwitches = UInt64(max(usage.ru_nvcsw, 0))
            exitCounters.involuntarySwitches = UInt64(max(usage.ru_nivcsw, 0))
            counters = exitCounters
        }
        let rootExitAt = MonotonicClock.nowNs
        var exitAt = rootExitAt
        // The rest of its tree: the processes it started in its group end within a second of it
        // (they are part of the launch), or are left running (a daemon, a background job) and
        // stopped like a ready server, with time to write what they record.
        let graceEnd = min(exitAt &+ ProcessRunner.treeGraceNs, deadline)
        var strayStop: UInt64?
        while stoppedAt == nil && kill(-pid, 0) == 0 {
            ProcessRunner.reapOrphans()
            let now = MonotonicClock.nowNs
            if now > graceEnd {
                kill(-pid, SIGTERM)
                strayStop = now
                exitAt = rootExitAt  // what was left running is not part of the launch
                break
            }
            usleep(2_000)
            exitAt = MonotonicClock.nowNs
        }
        if let stopped = stoppedAt ?? strayStop {
            // Stopped (ready, out of time, interrupted): time to write what they record, then killed.
            let grace = ProcessRunner.stopGraceNs
            while kill(-pid, 0) == 0 && MonotonicClock.nowNs &- stopped < grace {
                ProcessRunner.reapOrphans()
                usleep(2_000)
            }
        }
        // Daemons: descendants that left the group and outlived the program, followed as it was.
        if followsDaemons && stoppedAt == nil && ProcessRunner.adoptsOrphans.load(ordering: .acquiring) {
            while !ProcessRunner.children(of: getpid()).isEmpty {
                ProcessRunner.reapOrphans()
                if let due = stopDue(MonotonicClock.nowNs) {
                    stop = due
                    break
                }
                usleep(20_000)
                exitAt = MonotonicClock.nowNs
            }
        }
        let daemons = ProcessRunner.stopOrphans(graceNs: ProcessRunner.stopGraceNs)
        // Whatever the run left behind: its process group, and orphans that left the group.
        kill(-pid, SIGKILL)
        ProcessRunner.endOrphans()
        readyTime.waitForReader()
        drainFaults()
        let outcome: Outcome
        switch stop {
        case _ where reaped != pid: outcome = .unknown
        case .interrupted: outcome = .interrupted(interruptSignal.load(ordering: .sequentiallyConsistent))
        case .timedOut: outcome = .timedOut
        case .duration: outcome = .stoppedAfterDuration
        case .ready: outcome = .stoppedWhenReady
        case nil: outcome = code & 0x7f == 0 ? .exited((code >> 8) & 0xff) : .signalled(code & 0x7f)
        }
        return Result(
            outcome: outcome, pid: pid, spawnNs: spawnNs, exitNs: exitAt - spawnNs, readyNs: readyTime.value,
            counters: counters, stoppedDaemons: followsDaemons ? [] : daemons,
            diskFaults: !recordsDiskFaults
                ? nil
                : faults == nil
                    ? .failure(DiskFaultRecords.Refusal(code: faultsError))
                    : .success(faultBytes.withUnsafeBytes { DiskFaultRecords.parse($0) }))
    }

    /// Why a run stopped its program: Ctrl-C or SIGTERM handed on, the timeout, the ready line or
    /// `--duration`, whichever came first.
    private enum Stop { case interrupted, timedOut, ready, duration }

    /// How long the processes a program started may outlive it and still count as its launch.
    static let treeGraceNs: UInt64 = 1_000_000_000

    /// How long a stopped program (ready, out of time or interrupted), its agent and the processes
    /// it started may take to end and write what they recorded before they are killed: a server's
    /// graceful shutdown and its profile's symbolization take a second or two.
    static let stopGraceNs: UInt64 = 5_000_000_000

    /// The signal that interrupted `liftoff` (see `forwardInterrupts`), or 0.
    static var interruption: Int32 { interruptSignal.load(ordering: .sequentiallyConsistent) }

    /// The index of the first newline in `bytes` at or after `start` (memchr: fast in any build).
    static func newline(in bytes: [UInt8], from start: Int) -> Int? {
        bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress, start < buffer.count,
                let found = memchr(base + start, Int32(UInt8(ascii: "\n")), buffer.count - start)
            else { return nil }
            return UnsafeRawPointer(found) - UnsafeRawPointer(base)
        }
    }

    /// How much of each output line `--ready` is matched against.
    static let readyLineLimit = 65_536

    /// One output stream of the child: the pipe it comes through, where it is echoed, the
    /// pattern looked for in it, and the line being read.
    struct WatchedStream {
        var fd: Int32
        /// The child's descriptor it carries: 1 standard output, 2 standard error.
        var child: Int32 = 1
        /// This process's standard output or error, for the echo; nil: the log only.
        var echo: Int32?
        var pattern: NSRegularExpression?
        var pending: [UInt8] = []
        var scanned = 0
        var matched: Bool
        var open = true

        init(fd: Int32, echo: Int32?, pattern: NSRegularExpression?) {
            self.fd = fd
            self.echo = echo
            self.pattern = pattern
            matched = pattern == nil
        }

        func matches(_ bytes: ArraySlice<UInt8>) -> Bool {
            guard let pattern else { return false }
            // A ready line is short: a huge line (a data dump) is matched on its first 64 KB.
            let line = String(decoding: bytes.prefix(ProcessRunner.readyLineLimit), as: UTF8.self)
            return pattern.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) != nil
        }

        /// Looks for the pattern in newly read bytes; whether a line matched.
        mutating func scan(_ bytes: ArraySlice<UInt8>) -> Bool {
            guard !matched else { return false }
            pending.append(contentsOf: bytes)
            var lineStart = 0
            while let newline = ProcessRunner.newline(in: pending, from: scanned) {
                scanned = newline + 1
                if matches(pending[lineStart..<newline]) {
                    matched = true
                    pending = []
                    return true
                }
                lineStart = newline + 1
            }
            // Only the unfinished line stays; its scanned part is not looked at again.
            pending.removeFirst(lineStart)
            scanned = pending.count
            return false
        }
    }

    /// Copies the child's output to the log (and to `echo`, this process's standard output or
    /// error), noting when a line first matches `pattern`. Each byte is looked at once for a
    /// newline and each line matched once, so a huge line costs its length.
    static func watchOutput(
        _ fd: Int32, log: Int32, echo: Int32?, pattern: NSRegularExpression?, spawnNs: UInt64, found: ReadyWatch
    ) {
        watchOutputs([WatchedStream(fd: fd, echo: echo, pattern: pattern)], log: log, spawnNs: spawnNs, found: found)
    }

    /// Copies several streams to one log as their bytes arrive (one reader, so the log keeps the
    /// order in which the child wrote to them, as far as two pipes can tell), each echoed and
    /// watched as it says.
    static func watchOutputs(_ streams: [WatchedStream], log: Int32, spawnNs: UInt64, found: ReadyWatch) {
        var streams = streams
        var buffer = [UInt8](repeating: 0, count: 65_536)
        // Both ready at once: standard error first. It is unbuffered, so what waits on it was
        // most likely written before what a program's buffered standard output flushed.
        let order = streams.indices.sorted { streams[$0].child > streams[$1].child }
        while streams.contains(where: \.open) {
            var entries = streams.map { pollfd(fd: $0.open ? $0.fd : -1, events: Int16(POLLIN), revents: 0) }
            let ready = Glibc.poll(&entries, nfds_t(entries.count), -1)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { break }
            for index in order where streams[index].open && entries[index].revents != 0 {
                let count = buffer.withUnsafeMutableBytes { read(streams[index].fd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else {
                    streams[index].open = false
                    continue
                }
                let now = MonotonicClock.nowNs
                buffer.withUnsafeBytes { _ = write(log, $0.baseAddress, count) }
                if let echo = streams[index].echo {
                    // A closed terminal or pipe ends the echo, not the run (the log keeps everything).
                    if !buffer.withUnsafeBytes({ StandardOutput.writeAll(echo, $0.baseAddress!, count) }) {
                        streams[index].echo = nil
                    }
                }
                if streams[index].scan(buffer[0..<count]) { found.set(now - spawnNs) }
            }
        }
        // A last line without a newline counts too.
        for stream in streams where !stream.matched && !stream.pending.isEmpty && stream.matches(stream.pending[...]) {
            found.set(MonotonicClock.nowNs - spawnNs)
        }
        found.readerDone()
    }

    /// Whether the child has exited, waiting up to `waitingMs` on its pidfd (or, without one,
    /// checking once and sleeping). The child is left to be reaped.
    private static func hasExited(_ pid: pid_t, pidfd: Int32, waitingMs: Int32) -> Bool {
        if pidfd >= 0 {
            var entry = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
            let result = Glibc.poll(&entry, 1, waitingMs)
            return result > 0
        }
        var info = siginfo_t()
        if waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0, info.si_signo == SIGCHLD {
            return true
        }
        if errno == ECHILD { return true }
        usleep(useconds_t(waitingMs) * 1_000)
        return false
    }

}

/// When the ready line appeared, handed from the threads reading the child's output.
final class ReadyWatch: @unchecked Sendable {
    // @unchecked Sendable: every field is guarded by `condition`.
    private let condition = NSCondition()
    private var readyNs: UInt64?
    private var readers = 0

    func set(_ ns: UInt64) {
        condition.lock()
        if readyNs == nil { readyNs = ns }
        condition.unlock()
    }

    func readerDone() {
        condition.lock()
        readers -= 1
        condition.broadcast()
        condition.unlock()
    }

    /// Waits (up to a second) for the readers to see the end of the output.
    func waitForReader() {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date(timeIntervalSinceNow: 1)
        while readers > 0 {
            if !condition.wait(until: deadline) { break }
        }
    }

    func expectReader() {
        condition.lock()
        readers += 1
        condition.unlock()
    }

    var value: UInt64? {
        condition.lock()
        defer { condition.unlock() }
        return readyNs
    }
}

/// The output streams `--ready` watches.
enum ReadyStreams: String, CaseIterable, Sendable {
    case both
    case stdout
    case stderr

    /// The child's descriptors: 1 for standard output, 2 for standard error.
    var descriptors: [Int32] {
        switch self {
        case .both: return [1, 2]
        case .stdout: return [1]
        case .stderr: return [2]
        }
    }

    /// `standard output and error`, for sentences.
    var phrase: String {
        switch self {
        case .both: return "standard output and error"
        case .stdout: return "standard output"
        case .stderr: return "standard error"
        }
    }
}
