import Foundation
import Liftoff
import LiftoffSampler

/// The bundled demo app: a catalogue browser. Its launch reads settings from a file, parses the
/// bundled JSON catalogue, indexes and hashes it, and builds a window with a navigation bar and
/// a list of 100 rows of labels and image views.
public final class DemoAppDelegate: ApplicationDelegate {
    /// Settings read from the bundled `settings.json`.
    public struct Settings: Codable, Sendable, Equatable {
        /// Colour theme.
        public var theme: String
        /// Rows shown at launch.
        public var rowsOnLaunch: Int
        /// Whether rows show thumbnails.
        public var thumbnails: Bool
    }

    /// What the launch produced.
    public private(set) var result: DemoWorkload.Result?
    /// The settings read at launch.
    public private(set) var settings: Settings?
    /// The key window.
    public private(set) var window: Window?
    /// Every life-cycle callback received, in order.
    public private(set) var received: [String] = []

    private let recorder: LaunchRecorder?
    private let workers: Int
    private let quitAfterLaunchMs: UInt64?
    private var quitScheduled = false

    /// Creates the delegate.
    /// - Parameters:
    ///   - recorder: records the launch steps as spans, when set.
    ///   - workers: worker queues that share the hashing.
    ///   - quitAfterLaunchMs: when set, the app leaves and is terminated this long after it
    ///     first becomes active (so `liftoff demo` ends by itself).
    public init(recorder: LaunchRecorder? = nil, workers: Int = 2, quitAfterLaunchMs: UInt64? = nil) {
        self.recorder = recorder
        self.workers = workers
        self.quitAfterLaunchMs = quitAfterLaunchMs
    }

    public func willFinishLaunching(_ application: Application, options: LaunchOptions) -> Bool {
        received.append("willFinishLaunching")
        return true
    }

    public func didFinishLaunching(_ application: Application, options: LaunchOptions) -> Bool {
        received.append("didFinishLaunching")
        do {
            let settings = try step("read settings") { try DemoAppDelegate.readSettings() }
            self.settings = settings
            let data = try step("read catalogue") { try DemoWorkload.readCatalogFile() }
            let items = try step("parse catalogue") { try DemoWorkload.decodeCatalog(data) }
            let tree = step("build search tree") { DemoWorkload.buildSearchTree(items) }
            let index = step("build category index") { DemoWorkload.buildCategoryIndex(items) }
            let digest = step("hash catalogue") { DemoWorkload.hashCatalog(items, workers: workers) }
            result = DemoWorkload.Result(items: items.count, treeHeight: tree.height, categories: index.count, digest: digest)
            if !options.isBackgroundLaunch {
                step("build views") {
                    let window = Window(frame: Rect(x: 0, y: 0, width: 390, height: 844), name: "main")
                    let rows = Array(items.prefix(settings.rowsOnLaunch))
                    window.rootViewController = CatalogViewController(items: rows, thumbnails: settings.thumbnails)
                    window.makeKeyAndVisible(in: application)
                    self.window = window
                }
            }
            return true
        } catch {
            FileHandle.standardError.write(Data("demo: the launch could not read its data: \(error)\n".utf8))
            return false
        }
    }

    public func didBecomeActive(_ application: Application) {
        received.append("didBecomeActive")
        if let quitAfterLaunchMs, !quitScheduled {
            quitScheduled = true
            application.runLoop.schedule(afterNanoseconds: quitAfterLaunchMs * 1_000_000, name: "demo quits") {
                application.send(.userLeaves)
                application.send(.systemTerminate)
            }
        }
    }

    public func willResignActive(_ application: Application) { received.append("willResignActive") }
    public func didEnterBackground(_ application: Application) { received.append("didEnterBackground") }
    public func willEnterForeground(_ application: Application) { received.append("willEnterForeground") }
    public func willTerminate(_ application: Application) { received.append("willTerminate") }

    private func step<T>(_ name: String, _ body: () throws -> T) rethrows -> T {
        if let recorder { return try recorder.span(name, body) }
        return try body()
    }

    /// Reads the bundled `settings.json`.
    @inline(never)
    static func readSettings() throws -> Settings {
        guard let url = Bundle.module.url(forResource: "settings", withExtension: "json") else {
            throw CocoaError(.fileNoSuchFile)
        }
        return try JSONDecoder().decode(Settings.self, from: Data(contentsOf: url))
    }
}

/// The catalogue screen: a navigation bar over a list of rows.
final class CatalogViewController: ViewController, @unchecked Sendable {
    private let items: [DemoWorkload.Item]
    private let thumbnails: Bool
    private(set) var list: View?

    init(items: [DemoWorkload.Item], thumbnails: Bool) {
        self.items = items
        self.thumbnails = thumbnails
        super.init(title: "Catalogue")
    }

    override func loadView() -> View {
        let root = View(frame: Rect(x: 0, y: 0, width: 390, height: 844), name: "catalogue")
        let bar = View(frame: Rect(x: 0, y: 0, width: 390, height: 88), name: "navigation bar")
        bar.addSubview(Label(text: "Catalogue", frame: Rect(x: 16, y: 44, width: 200, height: 32)))
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
