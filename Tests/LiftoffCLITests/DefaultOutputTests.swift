import Foundation
import LiftoffTestSupport
import Testing

@testable import LiftoffCLI

@Suite("where liftoff writes and finds its files", .timeLimit(.minutes(5)))
struct DefaultOutputTests {
    @Test("without --out, each profile gets a new folder in the user's cache, and latest links to the newest")
    func defaultFolderIsInTheCache() throws {
        let home = temporaryFolder()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let first = try ProfileCommand.newDefaultFolder(program: "/usr/bin/My Server!", environment: ["HOME": home.path], now: now)
        try FileManager.default.createDirectory(at: first, withIntermediateDirectories: true)
        let second = try ProfileCommand.newDefaultFolder(program: "./MyServer", environment: ["HOME": home.path], now: now)
        let profiles = home.appendingPathComponent(".cache/liftoff/profiles")
        #expect(first.deletingLastPathComponent().standardizedFileURL == profiles.standardizedFileURL)
        #expect(first.lastPathComponent == "MyServer-20270115-080000")
        // The same second: a folder of its own, and latest follows it.
        #expect(second.lastPathComponent == "MyServer-20270115-080000-2")
        let latest = try FileManager.default.destinationOfSymbolicLink(atPath: profiles.appendingPathComponent("latest").path)
        #expect(latest == second.lastPathComponent)
        // XDG_CACHE_HOME wins over HOME; a relative one is ignored, as the XDG specification says.
        let cache = temporaryFolder()
        let xdg = try ProfileCommand.newDefaultFolder(program: "a", environment: ["HOME": home.path, "XDG_CACHE_HOME": cache.path], now: now)
        #expect(xdg.path.hasPrefix(cache.appendingPathComponent("liftoff/profiles").path))
        let relative = try ProfileCommand.newDefaultFolder(program: "a", environment: ["HOME": home.path, "XDG_CACHE_HOME": "cache"], now: now)
        #expect(relative.path.hasPrefix(profiles.path))
        // A name made only of what a folder name cannot hold still names a folder.
        let odd = try ProfileCommand.newDefaultFolder(program: "..", environment: ["HOME": home.path], now: now)
        #expect(odd.lastPathComponent.hasPrefix("program"))
    }

    @Test("liftoff profile without --out writes nothing in the folder it runs in, the user's package")
    func profileLeavesThePackageAlone() throws {
        let tool = try BuiltTool.find()
        let package = temporaryFolder()
        let home = temporaryFolder()
        try "// swift-tools-version: 6.1\n".write(to: package.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        // The user's cache, as HOME gives it (set too, in case the tests run with one of their own).
        let result = try tool.run(
            ["profile", "--", "/bin/true"], environment: ["HOME": home.path, "XDG_CACHE_HOME": home.appendingPathComponent(".cache").path],
            in: package)
        let text = result.stdout + result.stderr
        #expect(result.status == 0, "\(text)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: package.path) == ["Package.swift"])
        let latest = home.appendingPathComponent(".cache/liftoff/profiles/latest")
        #expect(FileManager.default.fileExists(atPath: latest.appendingPathComponent("profile.json").path))
        #expect(FileManager.default.fileExists(atPath: latest.appendingPathComponent("index.html").path))
        // The summary says where the reports went.
        let folder = try FileManager.default.destinationOfSymbolicLink(atPath: latest.path)
        #expect(text.contains(folder), "\(text)")
    }

    @Test("liftoff finds its agent beside itself (a build) or in ../lib/liftoff (an installation, wherever it was moved)")
    func agentLocations() {
        #expect(
            ProfileCommand.agentLocations(executable: "/opt/tools/bin/liftoff") == [
                "/opt/tools/bin/libLiftoffAgent.so", "/opt/tools/lib/liftoff/libLiftoffAgent.so",
            ])
    }
}
