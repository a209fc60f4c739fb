import Dispatch
import LiftoffProfile

/// One piece of launch work for the ``LaunchScheduler``.
///
/// ```swift
/// let parse = LaunchTask("parse catalogue", lane: .background(qos: .userInitiated), tags: [.io]) {
///     try store.load()
/// }
/// let views = LaunchTask("build views", lane: .main, dependsOn: ["parse catalogue"], tags: [.ui]) {
///     buildViews()
/// }
/// ```
public struct LaunchTask: Sendable {
    /// Where a task runs.
    public enum Lane: Sendable, Hashable, CustomStringConvertible {
        /// On the main thread, before the first frame: the critical lane.
        case main
        /// On the main run loop after the first frame, one task per iteration, so frames keep flowing.
        case mainAfterFirstFrame
        /// On `DispatchQueue.global(qos:)`.
        case background(qos: DispatchQoS.QoSClass)

        /// The lane's name in profiles, e.g. `main` or `background(utility)`.
        public var name: Profile.LaneName {
            switch self {
            case .main: return .main
            case .mainAfterFirstFrame: return .mainAfterFirstFrame
            case .background(let qos): return .background(qos: "\(qos)")
            }
        }

        /// The lane's name.
        public var description: String { name.rawValue }

        /// Whether tasks of this lane run on the main thread.
        public var isMain: Bool {
            if case .background = self { return false }
            return true
        }
    }

    /// What kind of work a task does; the thread rules read these.
    public struct Tag: Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
        /// The tag's name.
        public var name: String
        /// Creates a tag.
        public init(_ name: String) { self.name = name }
        public init(stringLiteral value: String) { name = value }
        public var description: String { name }

        /// Sets up the UI: must run on the main thread.
        public static let ui = Tag("ui")
        /// Blocks (locks, waits, heavy work): must not run on the main thread during launch.
        public static let blocking = Tag("blocking")
        /// File or network I/O: must not run on the main thread during launch.
        public static let io = Tag("io")
    }

    /// The work.
    public enum Body: Sendable {
        /// Synchronous work.
        case sync(@Sendable () throws -> Void)
        /// Asynchronous work (on background lanes it runs in a `Task`).
        case async(@Sendable () async throws -> Void)
    }

    /// Unique name.
    public var name: String
    /// Where it runs.
    public var lane: Lane
    /// Names of the tasks that must finish first.
    public var dependencies: [String]
    /// What kind of work it is.
    public var tags: Set<Tag>
    /// The work.
    public var body: Body
    /// How long it may take; past that it fails (and so do its dependents).
    public var timeoutNs: UInt64?

    /// Creates a synchronous task.
    public init(
        _ name: String, lane: Lane = .main, dependsOn dependencies: [String] = [], tags: Set<Tag> = [],
        timeoutNs: UInt64? = nil, _ body: @escaping @Sendable () throws -> Void
    ) {
        self.name = name
        self.lane = lane
        self.dependencies = dependencies
        self.tags = tags
        self.body = .sync(body)
        self.timeoutNs = timeoutNs
    }

    /// Creates an asynchronous task.
    public init(
        _ name: String, lane: Lane = .background(qos: .userInitiated), dependsOn dependencies: [String] = [],
        tags: Set<Tag> = [], timeoutNs: UInt64? = nil, async body: @escaping @Sendable () async throws -> Void
    ) {
        self.name = name
        self.lane = lane
        self.dependencies = dependencies
        self.tags = tags
        self.body = .async(body)
        self.timeoutNs = timeoutNs
    }

    /// Whether the task is tagged as blocking or I/O work.
    public var isBlocking: Bool { tags.contains(.blocking) || tags.contains(.io) }
}

/// Everything wrong with a launch plan, found before anything runs.
public struct LaunchPlanError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Each problem, one sentence each, in a stable order.
    public var problems: [String]

    public var description: String {
        "The launch plan has \(problems.count == 1 ? "a problem" : "\(problems.count) problems"):\n"
            + problems.map { "  - \($0)" }.joined(separator: "\n")
    }
}

/// A validated set of launch tasks: unique names, known dependencies, no cycles, and UI work
/// only on main lanes.
public struct LaunchPlan: Sendable {
    /// What to do with a UI-tagged task on a background lane.
    public enum BackgroundUIPolicy: Sendable {
        /// Refuse the plan.
        case reject
        /// Move the task to the main lane and record a warning.
        case hopToMain
    }

    /// The tasks, in the order given.
    public let tasks: [LaunchTask]
    /// Tasks moved to the main lane by ``BackgroundUIPolicy/hopToMain``.
    public let hoppedToMain: [String]

    /// Validates `tasks`.
    /// - Throws: ``LaunchPlanError`` listing every problem at once.
    public init(_ tasks: [LaunchTask], backgroundUI: BackgroundUIPolicy = .reject) throws {
        var problems: [String] = []
        var seen: [String: Int] = [:]
        for task in tasks {
            seen[task.name, default: 0] += 1
        }
        for (name, count) in seen.sorted(by: { $0.key < $1.key }) where count > 1 {
            problems.append("'\(name)' is the name of \(count) tasks; names must be unique.")
        }
        for task in tasks {
            for dependency in task.dependencies where seen[dependency] == nil {
                problems.append("'\(task.name)' depends on '\(dependency)', which is not in the plan.")
            }
        }
        var adjusted = tasks
        var hopped: [String] = []
        for index in adjusted.indices where adjusted[index].tags.contains(.ui) && !adjusted[index].lane.isMain {
            switch backgroundUI {
            case .reject:
                problems.append(
                    "'\(adjusted[index].name)' is UI work on lane \(adjusted[index].lane); UI work must run on a main lane.")
            case .hopToMain:
                hopped.append(adjusted[index].name)
                adjusted[index].lane = .main
            }
        }
        let lanes = Dictionary(adjusted.map { ($0.name, $0.lane) }, uniquingKeysWith: { first, _ in first })
        for task in adjusted {
            if case .async = task.body, task.lane.isMain {
                problems.append("'\(task.name)' is asynchronous work on lane \(task.lane); asynchronous tasks run on background lanes.")
            }
            guard task.lane == .main else { continue }
            // Directly or through other tasks: the main thread would wait for work that can only
            // run after the first frame, which it is holding up.
            let byName = Dictionary(adjusted.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
            var seen = Set<String>()
            var stack = task.dependencies
            while let name = stack.popLast() {
                guard seen.insert(name).inserted, let dependency = byName[name] else { continue }
                if lanes[name] == .mainAfterFirstFrame {
                    problems.append(
                        "'\(task.name)' runs before the first frame but depends on '\(name)', which runs after it.")
                    break
                }
                stack += dependency.dependencies
            }
        }
        if let cycle = LaunchPlan.findCycle(tasks) {
            problems.append("There is a dependency cycle: \(cycle.joined(separator: " → ")) (each depends on the next).")
        }
        guard problems.isEmpty else { throw LaunchPlanError(problems: problems) }
        self.tasks = adjusted
        self.hoppedToMain = hopped
    }

    /// The first cycle found, as a path that returns to its start; each task depends on the next.
    static func findCycle(_ tasks: [LaunchTask]) -> [String]? {
        let byName = Dictionary(tasks.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var state: [String: Int] = [:]  // 1: on the path, 2: done
        var path: [String] = []
        func visit(_ name: String) -> [String]? {
            if state[name] == 2 { return nil }
            if state[name] == 1 {
                let start = path.firstIndex(of: name) ?? 0
                return Array(path[start...]) + [name]
            }
            state[name] = 1
            path.append(name)
            for dependency in byName[name]?.dependencies ?? [] where byName[dependency] != nil {
                if let cycle = visit(dependency) { return cycle }
            }
            path.removeLast()
            state[name] = 2
            return nil
        }
        for task in tasks {
            if let cycle = visit(task.name) { return cycle }
        }
        return nil
    }
}
