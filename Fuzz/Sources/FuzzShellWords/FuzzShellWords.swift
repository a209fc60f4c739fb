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
            // Quoted scalar by scalar, as a shell sees the text.
            let quoted = words.map { word in
                var view = String.UnicodeScalarView()
                view.append("'")
                for scalar in word.unicodeScalars {
                    if scalar == "'" { view.append(contentsOf: #"'\''"#.unicodeScalars) } else { view.append(scalar) }
                }
                view.append("'")
                return String(view)
            }.joined(separator: " ")
            let again = try? ShellWords.split(quoted)
            precondition(again == words, "quoting \(words) back splits into \(again ?? [])")
        }
    }
}
