import Foundation
import Liftoff
import LiftoffSampler
import Synchronization

/// The bundled demo app: a catalogue browser. Its launch reads settings from a file, parses the
/// bundled JSON catalogue, indexes and hashes it, and builds a window with a navigation bar and
/// a list of 100 rows of labels and image views, as a ``LaunchPlan`` run by a ``LaunchScheduler``.
///
/// The ``Plan/naive`` plan does everything on the main thread before the first frame, as launch
/// code often does; the ``Plan/optimized`` plan keeps only UI work there, reads and parses in the
/// background, and defers the rest until after the first frame.
public final class DemoAppDelegate: ApplicationDelegate, @unchecked Sendable {
    // @unchecked Sendable: its mutable state (window, received, quitScheduled) is touched on
    // the main thread only: the callbacks and the main-lane tasks that capture it run there.

    /// Which launch plan the demo runs.
    public enum Plan: String, Sendable, CaseIterable {
        /// Everything on the main thread before the first frame.
        case naive
        /// Only UI work on the main thread; I/O and parsing in the background; the rest deferred.
        case optimized
    }

    /// Settings read from the bundled `settings.json`.
    public struct Settings: Codable, Sendable, Equatable {
        /// Colour theme.
        public var theme: String
        /// Rows shown at launch.
        public var rowsOnLaunch: Int
        /// Whether rows show thumbnails.
        public var thumbnails: Bool
    }

    /// What the launch produced, once every task has run.
    public var result: DemoWorkload.Result? { shared.result }
    /// The key window.
    public private(set) var window: Window?
    /// Every life-cycle callback received, in order.
    public private(set) var received: [String] = []
    /// The scheduler running the launch plan.
    public private(set) var scheduler: LaunchScheduler?

    /// The plan this delegate runs.
    public let plan: Plan
    private let recorder: LaunchRecorder?
    private let quitAfterLaunchMs: UInt64?
    private let extraLaunchWorkMs: UInt64
    private let injectHangMs: UInt64
    private let slowdownPercent: Double
    private let shared = DemoState()
    private var quitScheduled = false

    /// Creates the delegate.
    /// - Parameters:
    ///   - plan: the launch plan.
    ///   - recorder: records the tasks and callbacks, when set.
    ///   - quitAfterLaunchMs: when set, the app leaves and is terminated this long after its
    ///     launch work has all run (so `liftoff demo` ends by itself).
    ///   - extraLaunchWorkMs: extra CPU work added to parsing, to simulate a slower build.
    ///   - injectHangMs: when set, a deferred task blocks the main thread this long after the
    ///     first frame (a hang to find in the profile).
    ///   - slowdownPercent: slows the launch down by about this percentage: once the catalogue
    ///     is parsed, `DemoWorkload.extraWork` burns CPU for this share of the launch time so
    ///     far (measured from the recorder's origin), on the critical path to the first frame.
    public init(
        plan: Plan = .optimized, recorder: LaunchRecorder? = nil, quitAfterLaunchMs: UInt64? = nil,
        extraLaunchWorkMs: UInt64 = 0, injectHangMs: UInt64 = 0, slowdownPercent: Double = 0
    ) {
        self.plan = plan
        self.recorder = recorder
        self.quitAfterLaunchMs = quitAfterLaunchMs
        self.extraLaunchWorkMs = extraLaunchWorkMs
        self.injectHangMs = injectHangMs
        self.slowdownPercent = slowdownPercent
    }

    public func willFinishLaunching(_ application: Application, options: LaunchOptions) -> Bool {
        received.append("willFinishLaunching")
        return true
    }

    public func didFinishLaunching(_ application: Application, options: LaunchOptions) -> Bool {
        received.append("didFinishLaunching")
        let launchPlan: LaunchPlan
        do {
            let recorder = self.recorder
            let slowdown = slowdownPercent
            let fixed = extraLaunchWorkMs * 1_000_000
            launchPlan = try DemoAppDelegate.makePlan(
                plan, shared: shared, extraWorkNs: {
                    guard slowdown > 0, let recorder else { return fixed }
                    return fixed + UInt64(Double(recorder.nowNs) * slowdown / 100)
                }, hangMs: injectHangMs
            ) { [weak self] in
                guard let self, !options.isBackgroundLaunch else { return }
                self.buildWindow(in: application)
            } refresh: { [weak self] in
                self?.refreshTitle()
            }
        } catch {
            FileHandle.standardError.write(Data("demo: \(error)\n".utf8))
            return false
        }
        // A dozen tasks of milliseconds each: their threads' CPU clocks, read around each task,
        // cost nothing here, and give each task its CPU time even when a busy machine left the
        // sampler no tick inside it.
        let scheduler = LaunchScheduler(plan: launchPlan, options: .init(measuresCPU: true), recorder: recorder)
        self.scheduler = scheduler
        scheduler.start(in: application)
        return true
    }

    public func didBecomeActive(_ application: Application) {
        received.append("didBecomeActive")
        if let quitAfterLaunchMs, !quitScheduled, let scheduler {
            quitScheduled = true
            scheduler.whenFinished {
                application.runLoop.schedule(afterNanoseconds: quitAfterLaunchMs * 1_000_000, name: "demo quits") {
                    application.send(.userLeaves)
                    application.send(.systemTerminate)
                }
            }
        }
    }

    public func willResignActive(_ application: Application) { received.append("willResignActive") }
    public func didEnterBackground(_ application: Application) { received.append("didEnterBackground") }
    public func willEnterForeground(_ application: Application) {
        received.append("willEnterForeground")
        // Launched in the background, the app built no UI; it shows it now, and its first
        // frame commits at the end of this iteration.
        if window == nil { buildWindow(in: application) }
    }
    public func willTerminate(_ application: Application) { received.append("willTerminate") }

    private func buildWindow(in application: Application) {
        guard let items = shared.items, let settings = shared.settings else { return }
        let window = Window(frame: Rect(x: 0, y: 0, width: 390, height: 844), name: "main")
        window.rootViewController = CatalogViewController(
            items: Array(items.prefix(settings.rowsOnLaunch)), thumbnails: settings.thumbnails)
        window.makeKeyAndVisible(in: application)
        self.window = window
    }

    private func refreshTitle() {
        guard let controller = window?.rootViewController as? CatalogViewController, let result = shared.result else { return }
        controller.showSummary("\(result.items) items, \(result.categories) index keys")
    }

    /// The demo's launch plan.
    static func makePlan(
        _ plan: Plan, shared: DemoState, extraWorkNs: @escaping @Sendable () -> UInt64 = { 0 }, hangMs: UInt64 = 0,
        buildViews: @escaping @Sendable () -> Void,
        refresh: @escaping @Sendable () -> Void
    ) throws -> LaunchPlan {
        let background: LaunchTask.Lane = plan == .naive ? .main : .background(qos: .userInitiated)
        let later: LaunchTask.Lane = plan == .naive ? .main : .background(qos: .utility)
        var tasks = [
            LaunchTask("read settings", lane: background, tags: [.io]) {
                shared.setSettings(try DemoAppDelegate.readSettings())
            },
            LaunchTask("read catalogue", lane: background, tags: [.io]) {
                shared.setData(try DemoWorkload.readCatalogFile())
            },
            LaunchTask("parse catalogue", lane: background, dependsOn: ["read catalogue"], tags: [.blocking]) {
                guard let data = shared.data else { return }
                shared.setItems(try DemoWorkload.decodeCatalog(data))
                let extra = extraWorkNs()
                if extra > 0 { DemoWorkload.extraWork(nanoseconds: extra) }
            },
            LaunchTask("build views", lane: .main, dependsOn: ["read settings", "parse catalogue"], tags: [.ui]) {
                buildViews()
            },
            LaunchTask("build search tree", lane: later, dependsOn: ["parse catalogue"], tags: [.blocking]) {
                shared.setTreeHeight(DemoWorkload.buildSearchTree(shared.items ?? []).height)
            },
            LaunchTask("build category index", lane: later, dependsOn: ["parse catalogue"], tags: [.blocking]) {
                shared.setCategories(DemoWorkload.buildCategoryIndex(shared.items ?? []).count)
            },
            LaunchTask("hash catalogue", lane: later, dependsOn: ["parse catalogue"], tags: [.blocking]) {
                shared.setDigest(DemoWorkload.hashCatalog(shared.items ?? [], workers: 0))
            },
        ]
        // The naive launch computes everything up front and shows no summary; the optimized one
        // shows it once the deferred work is done.
        if plan == .optimized {
            tasks.append(
                LaunchTask(
                    "show summary", lane: .mainAfterFirstFrame,
                    dependsOn: ["build search tree", "build category index", "hash catalogue", "build views"], tags: [.ui]
                ) { refresh() })
        }
        if hangMs > 0 {
            tasks.append(
                LaunchTask("injected stall", lane: .mainAfterFirstFrame, dependsOn: ["build views"]) {
                    DemoWorkload.stall(milliseconds: hangMs)
                })
        }
        return try LaunchPlan(tasks)
    }

    /// Reads the bundled `settings.json`.
    @inline(never)
    static func readSettings() throws -> Settings {
        ThreadRules.noteBlocking("read settings.json")
        guard let url = DemoResources.url(forResource: "settings", withExtension: "json") else {
            throw CocoaError(.fileNoSuchFile)
        }
        return try JSONDecoder().decode(Settings.self, from: Data(contentsOf: url))
    }
}

/// What the demo's launch tasks produce, shared between threads.
final class DemoState: Sendable {
    private struct Values {
        var settings: DemoAppDelegate.Settings?
        var data: Data?
        var items: [DemoWorkload.Item]?
        var treeHeight: Int?
        var categories: Int?
        var digest: UInt64?
    }

    private let values = Mutex(Values())

    var settings: DemoAppDelegate.Settings? { values.withLock { $0.settings } }
    var data: Data? { values.withLock { $0.data } }
    var items: [DemoWorkload.Item]? { values.withLock { $0.items } }

    func setSettings(_ settings: DemoAppDelegate.Settings) { values.withLock { $0.settings = settings } }
    func setData(_ data: Data) { values.withLock { $0.data = data } }
    func setItems(_ items: [DemoWorkload.Item]) { values.withLock { $0.items = items } }
    func setTreeHeight(_ height: Int) { values.withLock { $0.treeHeight = height } }
    func setCategories(_ count: Int) { values.withLock { $0.categories = count } }
    func setDigest(_ digest: UInt64) { values.withLock { $0.digest = digest } }

    var result: DemoWorkload.Result? {
        values.withLock { values in
            guard let items = values.items, let height = values.treeHeight, let categories = values.categories,
                let digest = values.digest
            else { return nil }
            return DemoWorkload.Result(items: items.count, treeHeight: height, categories: categories, digest: digest)
        }
    }
}

/// The catalogue screen: a navigation bar over a list of rows.
final class CatalogViewController: ViewController, @unchecked Sendable {
    private let items: [DemoWorkload.Item]
    private let thumbnails: Bool
    private(set) var list: View?
    private var summary: Label?

    init(items: [DemoWorkload.Item], thumbnails: Bool) {
        self.items = items
        self.thumbnails = thumbnails
        super.init(title: "Catalogue")
    }

    override func loadView() -> View {
        let root = View(frame: Rect(x: 0, y: 0, width: 390, height: 844), name: "catalogue")
        let bar = View(frame: Rect(x: 0, y: 0, width: 390, height: 88), name: "navigation bar")
        bar.addSubview(Label(text: "Catalogue", frame: Rect(x: 16, y: 44, width: 200, height: 32)))
        let summary = Label(text: "", frame: Rect(x: 16, y: 72, width: 300, height: 14))
        bar.addSubview(summary)
        self.summary = summary
        let sort = Button(title: "Sort", frame: Rect(x: 320, y: 44, width: 60, height: 32))
        bar.addSubview(sort)
        let list = View(frame: Rect(x: 0, y: 88, width: 390, height: 756), name: "list")
        for (index, item) in items.enumerated() {
            list.addSubview(RowView(item: item, index: index, thumbnail: thumbnails))
        }
        root.addSubview(list)
        root.addSubview(bar)
        sort.addAction { [weak list] _ in
            guard let list else { return }
            let rows = list.subviews.compactMap { $0 as? RowView }.sorted { $0.item.price < $1.item.price }
            for (index, row) in rows.enumerated() {
                row.frame.origin.y = Double(index) * RowView.height
                row.setNeedsDisplay()
            }
        }
        self.list = list
        return root
    }

    /// Shows a line under the title.
    func showSummary(_ text: String) {
        summary?.text = text
    }
}

/// One row: thumbnail, name and price; a tap selects it.
final class RowView: View, @unchecked Sendable {
    static let height = 56.0
    let item: DemoWorkload.Item
    private(set) var isSelected = false

    init(item: DemoWorkload.Item, index: Int, thumbnail: Bool) {
        self.item = item
        super.init(frame: Rect(x: 0, y: Double(index) * RowView.height, width: 390, height: RowView.height), name: item.sku)
        if thumbnail {
            addSubview(ImageView(imageName: "thumb-\(item.sku)", frame: Rect(x: 12, y: 6, width: 44, height: 44)))
        }
        addSubview(Label(text: item.name, frame: Rect(x: 64, y: 8, width: 240, height: 20)))
        addSubview(Label(text: String(format: "%.2f", item.price), frame: Rect(x: 310, y: 8, width: 68, height: 20)))
    }

    override func handleTap(_ tap: Tap) -> Bool {
        isSelected.toggle()
        setNeedsDisplay()
        return true
    }
}
