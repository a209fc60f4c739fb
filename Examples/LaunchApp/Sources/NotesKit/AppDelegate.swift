import Foundation
import Liftoff

/// The app's delegate. Its launch work is a plan: the settings and the notes load in the
/// background, the views are built on the main thread once both are in, the search index is
/// built in the background, and the note count is shown after the first frame.
// `@unchecked Sendable`: its state belongs to the main thread; launch tasks on other threads
// touch only the store.
public final class AppDelegate: ApplicationDelegate, @unchecked Sendable {
    /// The key window, once built.
    public private(set) var window: Window?
    /// The scheduler running the launch plan.
    public private(set) var scheduler: LaunchScheduler?
    /// What the launch loads.
    public let store: NoteStore
    private let recorder: LaunchRecorder?
    private let quitsAfterLaunch: Bool

    /// - Parameters:
    ///   - recorder: records the plan's tasks and the callbacks, when set.
    ///   - quitsAfterLaunch: the app leaves and terminates once every launch task has run.
    public init(store: NoteStore = NoteStore(), recorder: LaunchRecorder? = nil, quitsAfterLaunch: Bool = false) {
        self.store = store
        self.recorder = recorder
        self.quitsAfterLaunch = quitsAfterLaunch
    }

    public func didFinishLaunching(_ app: Application, options: LaunchOptions) -> Bool {
        let store = self.store
        let plan: LaunchPlan
        do {
            plan = try LaunchPlan([
                LaunchTask("read settings", lane: .background(qos: .userInitiated), tags: [.io]) { try store.readSettings() },
                LaunchTask("parse notes", lane: .background(qos: .userInitiated), tags: [.blocking]) { store.parseNotes() },
                LaunchTask("build views", lane: .main, dependsOn: ["read settings", "parse notes"], tags: [.ui]) {
                    self.buildWindow(in: app)
                },
                LaunchTask("index search", lane: .background(qos: .utility), dependsOn: ["parse notes"]) { store.indexForSearch() },
                LaunchTask("show count", lane: .mainAfterFirstFrame, dependsOn: ["build views"], tags: [.ui]) {
                    self.showCount()
                },
            ])
        } catch {
            // A plan that does not validate: no window, no first frame, and the launch watchdog
            // ends the app after 20 s with exit status 3.
            FileHandle.standardError.write(Data("notes: \(error)\n".utf8))
            return false
        }
        let scheduler = LaunchScheduler(plan: plan, recorder: recorder)
        scheduler.start(in: app)
        self.scheduler = scheduler
        return true
    }

    public func didBecomeActive(_ app: Application) {
        guard quitsAfterLaunch, let scheduler else { return }
        // `send` may be called from any thread; the loop handles the events in order.
        scheduler.whenFinished {
            app.send(.userLeaves)
            app.send(.systemTerminate)
        }
    }

    /// The label that shows how many notes there are, filled in after the first frame.
    public private(set) var countLabel: Label?

    private func showCount() {
        countLabel?.text = "\(store.notes.count) notes"
    }

    private func buildWindow(in app: Application) {
        let settings = store.settings ?? NoteStore.Settings()
        let window = Window(frame: Rect(x: 0, y: 0, width: 390, height: 844), name: "notes")
        window.addSubview(Label(text: settings.title, frame: Rect(x: 16, y: 60, width: 250, height: 32)))
        let countLabel = Label(text: "", frame: Rect(x: 270, y: 60, width: 104, height: 32))
        window.addSubview(countLabel)
        self.countLabel = countLabel
        for (row, note) in store.notes.prefix(settings.notesOnLaunch).enumerated() {
            let y = 100 + Double(row) * 44
            window.addSubview(Label(text: note, frame: Rect(x: 16, y: y, width: 358, height: 40)))
        }
        window.makeKeyAndVisible(in: app)   // the first frame commits after this task returns
        self.window = window
    }
}
