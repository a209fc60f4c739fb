import FuzzDriver
import Foundation
import LiftoffCLI

// A command line either splits into words or is refused; words quoted back split the same way.
@main
struct FuzzShellWordsTarget {
    static func main() {
        FuzzDriver.main { data in
            let text = String(decoding: data, as: UTF8.self)
            guard let words = try? ShellWords.split(text) else { return }
            let quoted = ShellWords.quote(words)
            let again = try? ShellWords.split(quoted)
            precondition(again == words, "quoting \(words) back splits into \(again ?? [])")
        }
    }
}
