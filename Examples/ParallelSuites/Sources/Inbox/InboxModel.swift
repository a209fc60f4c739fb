import Dispatch
import Liftoff

/// An inbox screen's model: it loads messages off the main thread and shows how many there
/// are in a label.
public final class InboxModel: @unchecked Sendable {
    /// The label showing the unread count. UI: touch it on the main thread only.
    public let unreadLabel = Label(text: "", frame: Rect(x: 16, y: 16, width: 200, height: 24))
    private let messages: Int

    /// A model whose mailbox holds `messages` messages.
    public init(messages: Int) {
        self.messages = messages
    }

    /// Counts the messages on a background queue, then updates the label on the main queue.
    public func reload() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global(qos: .userInitiated).async {
                let count = self.countUnread()
                DispatchQueue.main.async {
                    self.unreadLabel.text = "\(count) unread"
                    done.resume()
                }
            }
        }
    }

    /// Counts the messages on a background queue and updates the label right there: a bug
    /// that thread rules catch.
    public func reloadCarelessly() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global(qos: .userInitiated).async {
                self.unreadLabel.text = "\(self.countUnread()) unread"
                done.resume()
            }
        }
    }

    /// Updates the label from the main actor.
    @MainActor
    public func markAllRead() {
        unreadLabel.text = "0 unread"
    }

    private func countUnread() -> Int {
        (0..<messages).filter { $0 % 3 == 0 }.count
    }
}
