import Foundation

/// Short names for Swift symbols, as `swift demangle --simplified` writes them:
/// `StretchedHash.absorb(_:)` for `LiftoffDemo.StretchedHash.absorb(Swift.String) -> ()`.
///
/// The Swift runtime's backtracer demangles with the same simplified options as the toolchain's
/// `swift-demangle --simplified`, so names are the same whether or not a toolchain is installed
/// (an installed `liftoff` carries the runtime inside it).
package enum SwiftNameSimplifier {
    /// Whether a symbol is a mangled Swift name.
    static func isSwift(_ mangled: String) -> Bool {
        mangled.hasPrefix("$s") || mangled.hasPrefix("_$s") || mangled.hasPrefix("$S") || mangled.hasPrefix("_T0")
    }

    /// The short name of a frame named `full` in `object`, from the simplifier's `simplified`.
    /// The simplifier drops a closure's context when it is a module (top-level code), leaving
    /// `closure #2 in `: the module is put back from the full name.
    static func shortName(_ simplified: String, full: String, object: String) -> String {
        var short = simplified
        if short.hasSuffix(" in "), let context = full.range(of: " in ", options: .backwards) {
            short += full[context.upperBound...]
        }
        return short
    }

    /// The short name of each frame that has a Swift symbol (nil for the others), from one batch.
    package static func shortNames(of frames: [SymbolizedFrame]) -> [String?] {
        let short = simplify(frames.compactMap(\.symbol))
        return frames.map { frame in
            guard let symbol = frame.symbol, let simplified = short[symbol] else { return nil }
            return shortName(simplified, full: frame.name, object: frame.object)
        }
    }

    /// The simplified name of each mangled Swift symbol that has one.
    static func simplify(_ mangled: [String]) -> [String: String] {
        var result: [String: String] = [:]
        for name in Set(mangled) where isSwift(name) {
            if let simplified = simplified(name), simplified != name { result[name] = simplified }
        }
        return result
    }

    /// The runtime's simplified demangling of one mangled name, nil when it is not one.
    static func simplified(_ mangled: String) -> String? {
        mangled.withCString { name in
            guard let text = _swift_backtrace_demangle(name, strlen(name), nil, nil) else { return nil }
            defer { free(text) }
            let simplified = String(cString: text)
            return simplified.isEmpty ? nil : simplified
        }
    }
}
