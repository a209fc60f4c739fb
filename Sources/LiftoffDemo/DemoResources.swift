import Foundation

/// The demo's bundled files: in an installation, from `lib/liftoff/` beside the `bin/` folder of
/// the running executable (wherever the installation was moved); else from the build's bundle.
enum DemoResources {
    /// The bundle's folder name, as the package manager names it.
    static let bundleName = "Liftoff_LiftoffDemo.resources"

    /// The URL of a bundled file, or nil when there is none.
    static func url(forResource name: String, withExtension type: String) -> URL? {
        let installed = Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("lib/liftoff/\(bundleName)")
        if let bundle = Bundle(path: installed.path) { return bundle.url(forResource: name, withExtension: type) }
        return Bundle.module.url(forResource: name, withExtension: type)
    }
}
