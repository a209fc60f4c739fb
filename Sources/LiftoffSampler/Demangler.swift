import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Demangles Swift names with the runtime's `swift_demangle` and C++ names with
/// `__cxa_demangle`, both looked up with `dlsym` so that neither is a link-time dependency.
// Holds only immutable C function pointers, which any thread may call.
struct Demangler: @unchecked Sendable {
    private typealias SwiftDemangle = @convention(c) (
        UnsafePointer<CChar>?, Int, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?, UInt32
    ) -> UnsafeMutablePointer<CChar>?
    private typealias CxxDemangle = @convention(c) (
        UnsafePointer<CChar>?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<Int32>?
    ) -> UnsafeMutablePointer<CChar>?

    private let swiftDemangle: SwiftDemangle?
    private let cxxDemangle: CxxDemangle?

    init() {
        let process = dlopen(nil, RTLD_NOW)
        swiftDemangle = dlsym(process, "swift_demangle").map { unsafeBitCast($0, to: SwiftDemangle.self) }
        // C++ frames come from libraries that load libstdc++, so look there only if it is loaded.
        let cxx = dlsym(process, "__cxa_demangle")
            ?? dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD).flatMap { dlsym($0, "__cxa_demangle") }
        cxxDemangle = cxx.map { unsafeBitCast($0, to: CxxDemangle.self) }
    }

    /// The demangled form of `name`, or `name` itself when it is not mangled. A PLT stub's
    /// `name@plt` keeps its suffix after the demangled name.
    func demangle(_ name: String) -> String {
        if name.hasSuffix("@plt"), name.count > 4 { return demangle(String(name.dropLast(4))) + "@plt" }
        if Demangler.isSwift(name), let swiftDemangle {
            let result = name.withCString { swiftDemangle($0, strlen($0), nil, nil, 0) }
            if let result {
                defer { free(result) }
                return String(cString: result)
            }
        } else if name.hasPrefix("_Z"), let cxxDemangle {
            var status: Int32 = 0
            let result = name.withCString { cxxDemangle($0, nil, nil, &status) }
            if let result {
                defer { free(result) }
                if status == 0 { return String(cString: result) }
            }
        }
        return name
    }

    static func isSwift(_ name: String) -> Bool {
        name.hasPrefix("$s") || name.hasPrefix("_$s") || name.hasPrefix("$S") || name.hasPrefix("_$S")
            || name.hasPrefix("_T0") || name.hasPrefix("$e") || name.hasPrefix("_$e")
    }
}

/// Demangling for other modules (the comparison of counted launches, whose names come from
/// callgrind as the linker wrote them).
package enum SymbolNames {
    private static let demangler = Demangler()

    /// A Swift or C++ symbol demangled, or the name itself.
    package static func demangle(_ name: String) -> String { demangler.demangle(name) }
}
