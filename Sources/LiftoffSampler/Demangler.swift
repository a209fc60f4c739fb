import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Demangles Swift names with the runtime's `swift_demangle` (linked, so that a `liftoff` with the
/// Swift runtime linked in finds it too) and C++ names with `__cxa_demangle`, looked up with
/// `dlsym` so that libstdc++ is no link-time dependency.
// Holds only immutable C function pointers, which any thread may call.
struct Demangler: @unchecked Sendable {
    private typealias CxxDemangle = @convention(c) (
        UnsafePointer<CChar>?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<Int32>?
    ) -> UnsafeMutablePointer<CChar>?

    private let cxxDemangle: CxxDemangle?

    init() {
        let process = dlopen(nil, RTLD_NOW)
        // C++ frames come from libraries that load libstdc++, so look there only if it is loaded.
        let cxx = dlsym(process, "__cxa_demangle")
            ?? dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD).flatMap { dlsym($0, "__cxa_demangle") }
        cxxDemangle = cxx.map { unsafeBitCast($0, to: CxxDemangle.self) }
    }

    /// The demangled form of `name`, or `name` itself when it is not mangled. A PLT stub's
    /// `name@plt` keeps its suffix after the demangled name.
    func demangle(_ name: String) -> String {
        if name.hasSuffix("@plt"), name.count > 4 { return demangle(String(name.dropLast(4))) + "@plt" }
        if Demangler.isSwift(name) {
            let result = name.withCString { swift_demangle($0, strlen($0), nil, nil, 0) }
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

/// The Swift runtime's demangler: the full form of a mangled Swift name, in a buffer from
/// `malloc`, or nil when it is not one.
@_silgen_name("swift_demangle")
private func swift_demangle(
    _ mangledName: UnsafePointer<CChar>?, _ mangledNameLength: Int, _ outputBuffer: UnsafeMutablePointer<CChar>?,
    _ outputBufferSize: UnsafeMutablePointer<Int>?, _ flags: UInt32
) -> UnsafeMutablePointer<CChar>?

/// The Swift runtime's demangler for backtraces (part of every Swift runtime since 5.9): the
/// simplified form of a Swift name (as `swift-demangle --simplified` writes it), or a C++ name
/// demangled. With no buffer it returns one from `malloc`, or nil when `mangledName` is not a
/// mangled name.
@_silgen_name("_swift_backtrace_demangle")
func _swift_backtrace_demangle(
    _ mangledName: UnsafePointer<CChar>?, _ mangledNameLength: Int,
    _ outputBuffer: UnsafeMutablePointer<CChar>?, _ outputBufferSize: UnsafeMutablePointer<Int>?
) -> UnsafeMutablePointer<CChar>?
