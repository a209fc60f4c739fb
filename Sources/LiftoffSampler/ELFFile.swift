import Foundation

/// What an ELF file on disk says about the program it holds.
public enum ELFFile {
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
