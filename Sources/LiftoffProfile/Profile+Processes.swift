extension Profile {
    /// One process of a profiled program's tree (`liftoff profile` follows every program the
    /// first one runs): its threads carry its id in ``ThreadInfo/processID``.
    public struct ProcessRecord: Codable, Sendable, Equatable {
        /// The process id.
        public var id: Int
        /// The parent's process id (that of `liftoff` for the first process).
        public var parentID: Int
        /// The command line of the program the process ran last.
        public var commandLine: [String]
        /// When the process started (its spawn or fork when known, else when the agent loaded).
        public var startNs: UInt64
        /// When its last program ended (or its recording was written).
        public var endNs: UInt64
        /// The programs the process ran, in order: more than one when it replaced itself with
        /// `exec` (a version manager's shim, a shell's `exec`), each earlier one the later one's
        /// pre-exec phase.
        public var programs: [Program]
        /// The signal that ended it, if one did.
        public var signal: Int?
        /// Set when the program installed its own SIGPROF handler (its own profiler): how many of
        /// its own signals the agent handed on to that handler, its own being kept first.
        public var programProfilerSignals: Int?
        /// Whether its main thread started with SIGPROF blocked, so the agent could not sample it.
        public var blocksProfilerSignal: Bool?
        /// Whether the samples are the program's own recorder's (the program links Liftoff),
        /// written by the agent because the program ended by a signal before it wrote its own
        /// profile: its spans and events are not in them.
        public var recordedItself: Bool?
        /// The program it went on as with `exec` that left no recording, as the exec named it: a
        /// statically linked, setuid or capability-raising program cannot load the agent. The
        /// process's end is then that exec's moment.
        public var unfollowedExec: String?

        /// Creates a process record.
        public init(
            id: Int, parentID: Int, commandLine: [String], startNs: UInt64, endNs: UInt64, programs: [Program] = [],
            signal: Int? = nil, programProfilerSignals: Int? = nil, blocksProfilerSignal: Bool? = nil,
            recordedItself: Bool? = nil, unfollowedExec: String? = nil
        ) {
            self.unfollowedExec = unfollowedExec
            self.recordedItself = recordedItself
            self.programProfilerSignals = programProfilerSignals
            self.blocksProfilerSignal = blocksProfilerSignal
            self.id = id
            self.parentID = parentID
            self.commandLine = commandLine
            self.startNs = startNs
            self.endNs = endNs
            self.programs = programs
            self.signal = signal
        }

        /// `python3.11 (1234)`: the program's name and the process id.
        public var label: String { "\(programName) (\(id))" }

        /// The program's file name; for an interpreter running a script (`bash pyenv-which`,
        /// `python3 manage.py`), the script's.
        public var programName: String {
            func file(_ path: String) -> String { path.split(separator: "/").last.map(String.init) ?? path }
            guard let first = commandLine.first else { return "process" }
            let program = file(first)
            let interpreters = ["sh", "bash", "dash", "zsh", "ksh", "perl", "ruby", "node", "env"]
            let interprets = interpreters.contains(program) || program.hasPrefix("python")
            if interprets, commandLine.count > 1, !commandLine[1].hasPrefix("-"), !commandLine[1].isEmpty {
                return file(commandLine[1])
            }
            return program
        }
    }

    /// One program a process ran, until it ended or replaced itself with `exec`.
    public struct Program: Codable, Sendable, Equatable {
        /// Its command line.
        public var commandLine: [String]
        /// When it started: its process's start, or the `exec` that began it.
        public var startNs: UInt64
        /// When it ended or called `exec`.
        public var endNs: UInt64
        /// Its time from `exec` to `main` by the kernel's counts, and the loader's timeline, when
        /// the agent ran in it (absent for a fork child that has not run `exec`, which has no
        /// loader, and for the launch's own program, whose is ``Profile/Phases/preMain``).
        public var preMain: PreMain?
        /// The same counts from its `main` to its end (its exit or exec): the main thread on a CPU,
        /// waiting for a core and blocked, and the process's bytes read from storage and page
        /// faults (at least these: sampling signals turn some major faults into minor ones).
        /// Absent when not measured.
        public var afterMain: PreMain?

        /// The file name of the program: `python3.11` for `/usr/bin/python3.11 -c …`.
        public var fileName: String {
            guard let first = commandLine.first else { return "?" }
            return first.split(separator: "/").last.map(String.init) ?? first
        }

        /// Creates a program record.
        public init(commandLine: [String], startNs: UInt64, endNs: UInt64, preMain: PreMain? = nil, afterMain: PreMain? = nil) {
            self.commandLine = commandLine
            self.startNs = startNs
            self.endNs = endNs
            self.preMain = preMain
            self.afterMain = afterMain
        }
    }

    /// Whether the profile has an app life cycle to report (state changes or committed frames):
    /// a program that launched through Liftoff's ``Profile/stateChanges``, not any program.
    public var hasLifeCycle: Bool { !stateChanges.isEmpty || !displayFrames.isEmpty }

    /// How reports name the launch's end: `first frame` for an app with a life cycle, `ready`
    /// for a server, a tool or any other program (its ready line, or a `LaunchRecorder`'s ready).
    public var readyName: String { hasLifeCycle ? "first frame" : "ready" }

    /// The process a thread belongs to, when the profile lists processes.
    public func process(ofThread id: Int) -> ProcessRecord? {
        guard let processID = thread(withID: id)?.processID else { return nil }
        return processes.first { $0.id == processID }
    }
}
