import Foundation

/// What an ELF file on disk says about the program it holds.
public enum ELFFile {
    /// How an executable is started, as far as loading a library into it goes.
    public enum Loading: Equatable, Sendable {
        /// Not an ELF file of this machine's kind (a script, say).
        case notELF
        /// Statically linked: no dynamic loader runs in it.
        case statical
        /// Started by this dynamic loader (`/lib64/ld-linux-x86-64.so.2`).
        case dynamic(loader: String)
    }

    /// How the executable at `path` is started, from its program headers.
    public static func loading(path: String) -> Loading {
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped),
            let table = ELFSymbolTable(image: data)
        else { return .notELF }
        return table.interpreter.map { .dynamic(loader: $0) } ?? .statical
    }

    /// Whether the executable at `path` links Liftoff's sampler (it has the sampler's marker
    /// section, or the sampler's start function among its symbols), and so records itself.
    /// False for anything that is not a readable ELF file.
    public static func linksLiftoff(path: String) -> Bool {
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped),
            let table = ELFSymbolTable(image: data)
        else { return false }
        return table.sectionNames.contains("liftoff_sampler") || table.hasSymbol(named: "lo_sampler_start")
    }
}
