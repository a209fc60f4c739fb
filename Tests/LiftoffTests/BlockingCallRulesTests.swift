import CLiftoffTestSupport
import Dispatch
import Foundation
import Liftoff
import LiftoffSampler
import Synchronization
import LiftoffTestSupport
import LiftoffTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A settings loader as an app would write it: reads its file with Foundation.
enum SettingsStore {
    @inline(never)
    static func load(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }
}

/// Stands for a vendor's code the allow-list exempts.
enum VendorStorage {
    @inline(never)
    static func load(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }
}

/// Files, sockets and locks for the blocking-call rules.
enum BlockingFixtures {
    /// A new empty folder (mkdir is no call the rules check).
    static func folder() -> URL {
        let url = testScratch.appendingPathComponent("liftoff-blocking-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A 200 KB settings file in a fresh folder, written on a thread of its own (so that a test on
    /// the main thread breaks no rule making it).
    static func settingsFile() throws -> String {
        let path = BlockingFixtures.folder().appendingPathComponent("settings.json").path
        let written = Mutex<(any Error)?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            do {
                try String(repeating: "{\"key\": \"value\"},\n", count: 12_000).write(toFile: path, atomically: false, encoding: .utf8)
            } catch {
                written.withLock { $0 = error }
            }
            done.signal()
        }
        done.wait()
        if let error = written.withLock({ $0 }) { throw error }
        return path
    }

    /// A TCP listener on 127.0.0.1: its descriptor and port.
    static func listener() throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EBADF) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 4) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.EADDRNOTAVAIL) }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    /// Connects a new TCP socket to 127.0.0.1:`port` and closes it.
    @inline(never)
    static func connectTo(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// Looks `name` up with getaddrinfo.
    @inline(never)
    /// Takes `lock` and gives it back, as an app's synchronous code would: the line of the take.
    static func takeAndRelease(_ lock: NSLock) -> Int {
        let line = #line + 1
        lock.lock()
        lock.unlock()
        return line
    }

    static func lookUp(_ name: String) -> Bool {
        var result: UnsafeMutablePointer<addrinfo>?
        defer { if let result { freeaddrinfo(result) } }
        return getaddrinfo(name, nil, nil, &result) == 0
    }
}

@Suite("Blocking calls in the UI context", .processStateForWholeSuite)
struct BlockingCallRulesTests {
    /// The line of `violation`'s call site in this file, if it is here.
    private func lineHere(_ violation: ThreadViolation) -> Int? {
        guard let site = violation.callSite(), site.file?.hasSuffix("BlockingCallRulesTests.swift") == true else { return nil }
        return site.line
    }

    @Test("on the main actor, a 200 KB file read through Foundation is disk-read-on-main, and usleep sleep-on-main, each at its line")
    @MainActor
    func readAndSleepOnMainActor() async throws {
        let path = try BlockingFixtures.settingsFile()
        var sleepLine = 0
        let violations = await collectThreadViolations {
            _ = try? SettingsStore.load(path)
            sleepLine = #line + 1
            usleep(30_000)
        }
        let read = try #require(violations.first { $0.rule == ThreadRules.diskReadOnMain }, "\(violations.map(\.message))")
        #expect(read.operation == "reading \(path)", "\(read.operation)")
        // Its open, reads and close are one violation, counted.
        #expect(violations.filter { $0.rule == ThreadRules.diskReadOnMain }.count == 1, "\(violations.map(\.message))")
        #expect(read.count >= 2, "\(read)")
        #expect(read.message.hasSuffix("in UI context, on thread main (\(read.threadID)), queue com.apple.main-thread (\(read.count) times).")
            || read.message.contains("in UI context, on "), "\(read.message)")
        #expect(read.report().contains("SettingsStore.load"), "\(read.report())")
        let sleep = try #require(violations.first { $0.rule == ThreadRules.sleepOnMain }, "\(violations.map(\.message))")
        #expect(sleep.operation.contains("usleep for 30.000 ms"), "\(sleep.operation)")
        #expect(lineHere(sleep) == sleepLine, "\(sleep.report())")
        // The read's call site is SettingsStore.load, in this file.
        #expect(lineHere(read) != nil, "\(read.report())")
    }

    @Test("on the main actor, waiting for an NSLock another thread holds is lock-wait-on-main at its line; the lock free is not")
    @MainActor
    func contendedLockOnMainActor() async throws {
        let lock = NSLock()
        let held = DispatchSemaphore(value: 0)
        var waitLine = 0
        let violations = await collectThreadViolations {
            _ = BlockingFixtures.takeAndRelease(lock)
            let holder = Thread {
                lock.lock()
                held.signal()
                usleep(40_000)
                lock.unlock()
            }
            holder.start()
            held.wait()
            waitLine = BlockingFixtures.takeAndRelease(lock)
        }
        let waits = violations.filter { $0.rule == ThreadRules.lockWaitOnMain }
        #expect(waits.count == 1 && waits.first?.count == 1, "the held lock's wait alone: \(violations.map(\.message))")
        let wait = try #require(waits.first)
        #expect(wait.operation.hasPrefix("pthread_mutex_lock waited "), "\(wait.operation)")
        #expect(lineHere(wait) == waitLine, "\(wait.report())")
    }

    @Test("the .threadRules trait fails a main-actor test that reads a file, at the loader's line")
    @MainActor
    func traitFailsTheRead() async throws {
        let path = try BlockingFixtures.settingsFile()
        let test = try #require(Test.current)
        try await withKnownIssue {
            try await ThreadRulesTrait.threadRules.provideScope(for: test, testCase: nil) { @MainActor in
                _ = try SettingsStore.load(path)
            }
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("disk-read-on-main") && $0.rawValue.contains(path) }
                && issue.sourceLocation?.fileName == "BlockingCallRulesTests.swift"
        }
    }

    @Test("expectNoThreadViolations fails at the line that slept, not at the expectation")
    @MainActor
    func expectationPointsAtTheBreach() {
        let sleepLine = #line + 3
        withKnownIssue {
            expectNoThreadViolations {
                usleep(2_000)
            }
        } matching: { issue in
            issue.comments.contains { $0.rawValue.contains("sleep-on-main") }
                && issue.sourceLocation?.fileName == "BlockingCallRulesTests.swift" && issue.sourceLocation?.line == sleepLine
        }
    }

    @Test("the same read in a detached task, off the main actor, is no violation")
    func detachedReadPasses() async throws {
        let path = try BlockingFixtures.settingsFile()
        let violations = await collectThreadViolations {
            await Task.detached { _ = try? SettingsStore.load(path) }.value
        }
        #expect(violations.filter { ThreadRules.blockingCallRules.contains($0.rule) }.isEmpty, "\(violations.map(\.message))")
    }

    @Test("a read under an allowed prefix is no violation; the same read outside it is")
    @MainActor
    func allowedPrefixPasses() async throws {
        let path = try BlockingFixtures.settingsFile()
        var configuration = ThreadRules.Configuration()
        configuration.allow(prefix: "LiftoffTests.VendorStorage.")
        let violations = await ThreadRules.withConfiguration(configuration) {
            await collectThreadViolations {
                _ = try? VendorStorage.load(path)
                _ = try? SettingsStore.load(path)
            }
        }
        let reads = violations.filter { $0.rule == ThreadRules.diskReadOnMain }
        #expect(reads.count >= 1, "\(violations.map(\.message))")
        #expect(reads.allSatisfy { !$0.report().contains("VendorStorage") }, "\(reads.map { $0.report() })")
    }

    @Test("writing a file on the main actor is disk-write-on-main")
    @MainActor
    func writeOnMainActor() async throws {
        let folder = BlockingFixtures.folder().path
        let violations = await collectThreadViolations {
            _ = FileManager.default.createFile(atPath: folder + "/out.txt", contents: Data(repeating: 7, count: 4096))
        }
        let write = try #require(violations.first { $0.rule == ThreadRules.diskWriteOnMain }, "\(violations.map(\.message))")
        #expect(write.operation.contains(folder), "\(write.operation)")
    }

    @Test("calls in an exempt scope (Liftoff's own span journal writes there) are not checked; the same write outside is")
    @MainActor
    func exemptScopeIsUnchecked() async throws {
        let folder = BlockingFixtures.folder().path
        let violations = await collectThreadViolations {
            func write(_ path: String) {
                let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                _ = Glibc.write(fd, "line\n", 5)
                close(fd)
            }
            BlockingCalls.exempt { write(folder + "/journal.spans") }
            write(folder + "/user.txt")
        }
        let writes = violations.filter { $0.rule == ThreadRules.diskWriteOnMain }.map(\.operation)
        #expect(!writes.isEmpty && writes.allSatisfy { $0.contains("user.txt") }, "\(writes)")
    }

    @Test("connecting to a TCP socket and looking up localhost on the main actor are network-on-main")
    @MainActor
    func networkOnMainActor() async throws {
        let listener = try BlockingFixtures.listener()
        defer { close(listener.fd) }
        var connected = false
        var found = false
        let violations = await collectThreadViolations {
            connected = BlockingFixtures.connectTo(port: listener.port)
            found = BlockingFixtures.lookUp("localhost")
        }
        #expect(connected && found)
        let network = violations.filter { $0.rule == ThreadRules.networkOnMain }
        #expect(network.contains { $0.operation.hasPrefix("connect of socket:") }, "\(network.map(\.operation))")
        #expect(network.contains { $0.operation == "getaddrinfo of localhost" }, "\(network.map(\.operation))")
    }

    @Test("each family of calls is its rule on the main actor: pread, pwrite and fsync; send and recv; nanosleep, clock_nanosleep, and poll, select and epoll_wait with a timeout; the same waits with none are not")
    @MainActor
    func callFamilies() async throws {
        let path = BlockingFixtures.folder().appendingPathComponent("data.bin").path
        let file = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        try #require(file >= 0)
        defer { close(file) }
        let listener = try BlockingFixtures.listener()
        defer { close(listener.fd) }
        // A connected pair of TCP sockets, made before anything is checked.
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(client) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = listener.port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        try #require(connected)
        let server = accept(listener.fd, nil, nil)
        try #require(server >= 0)
        defer { close(server) }
        let poller = lo_test_epoll_create()
        try #require(poller >= 0)
        defer { close(poller) }

        var bytes = [UInt8](repeating: 7, count: 64)
        let violations = await collectThreadViolations {
            _ = pwrite(file, &bytes, bytes.count, 0)
            _ = fsync(file)
            _ = pread(file, &bytes, bytes.count, 0)
            _ = send(client, &bytes, 8, 0)
            _ = recv(server, &bytes, 8, 0)
            var one = timespec(tv_sec: 0, tv_nsec: 1_000_000)
            _ = nanosleep(&one, nil)
            _ = clock_nanosleep(CLOCK_MONOTONIC, 0, &one, nil)
            _ = poll(nil, 0, 2)
            var tenth = timeval(tv_sec: 0, tv_usec: 3_000)
            _ = select(0, nil, nil, nil, &tenth)
            _ = lo_test_epoll_wait(poller, 4)
            // No timeout: an event loop's look at what is ready waits for nothing.
            _ = poll(nil, 0, 0)
            _ = lo_test_epoll_wait(poller, 0)
        }
        func operations(_ rule: Profile.RuleName) -> [String] { violations.filter { $0.rule == rule }.map(\.operation) }
        #expect(operations(ThreadRules.diskReadOnMain) == ["reading \(path)"], "\(violations.map(\.message))")
        // pwrite and fsync are two statements: two call sites, each writing the file.
        let writes = violations.filter { $0.rule == ThreadRules.diskWriteOnMain }
        #expect(writes.map(\.operation) == ["writing \(path)", "writing \(path)"], "pwrite and fsync: \(writes.map(\.message))")
        #expect(Set(writes.compactMap(lineHere)).count == 2, "\(writes.map { $0.report() })")
        let network = operations(ThreadRules.networkOnMain)
        #expect(network.contains { $0.hasPrefix("send of socket:[") } && network.contains { $0.hasPrefix("recv of socket:[") }, "\(network)")
        let sleeps = Set(operations(ThreadRules.sleepOnMain))
        #expect(
            sleeps == ["nanosleep for 1.000 ms", "clock_nanosleep for 1.000 ms", "poll for 2.000 ms", "select for 3.000 ms", "epoll_wait for 4.000 ms"],
            "the waits with a timeout, and only those: \(sleeps)")
    }

    @Test("a pipe's read and a /proc file's read on the main actor are no violations")
    @MainActor
    func quietDescriptorsPass() async throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer {
            close(ends[0])
            close(ends[1])
        }
        let violations = await collectThreadViolations {
            var byte: UInt8 = 1
            _ = write(ends[1], &byte, 1)
            _ = read(ends[0], &byte, 1)
            _ = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8)
        }
        #expect(violations.filter { ThreadRules.blockingCallRules.contains($0.rule) }.isEmpty, "\(violations.map(\.message))")
    }

    @Test("a pipe that takes the number of a file closed with fclose is a pipe, not the disk")
    @MainActor
    func reusedDescriptorIsToldAfresh() async throws {
        let path = try BlockingFixtures.settingsFile()
        // The file at a number no other test uses, as a stream.
        let number: Int32 = 900
        let opened = try #require(fopen(path, "r"))
        #expect(dup2(fileno(opened), number) == number)
        fclose(opened)
        let file = try #require(fdopen(number, "r"))
        // Told to be the disk by a read through it, then closed inside the C library.
        let fileReads = await collectThreadViolations {
            var byte: UInt8 = 0
            _ = read(number, &byte, 1)
            fclose(file)
        }
        #expect(fileReads.contains { $0.rule == ThreadRules.diskReadOnMain }, "\(fileReads.map(\.message))")
        // A pipe's end moved to that number by a call Liftoff does not see.
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        let moved = fcntl(ends[0], F_DUPFD, number)
        defer {
            close(ends[0])
            close(ends[1])
            close(moved)
        }
        #expect(moved == number)
        let violations = await collectThreadViolations {
            var byte: UInt8 = 1
            _ = write(ends[1], &byte, 1)
            _ = read(moved, &byte, 1)
        }
        #expect(violations.filter { ThreadRules.blockingCallRules.contains($0.rule) }.isEmpty, "\(violations.map(\.message))")
    }

    @Test("outside any collection or launch, nothing is checked")
    @MainActor
    func unarmedIsSilent() throws {
        let path = try BlockingFixtures.settingsFile()
        let before = ThreadRules.violations.filter { $0.rule == ThreadRules.diskReadOnMain && $0.operation.contains(path) }
        #expect(before.isEmpty)
        // Another test's collection may be armed meanwhile; this read is outside every collection
        // and must not be claimed by one.
        _ = try SettingsStore.load(path)
        let claimed = ThreadRules.violations.filter { $0.operation.contains(path) && $0.scope != nil }
        #expect(claimed.isEmpty, "\(claimed.map(\.message))")
    }
}

/// A delegate whose didFinishLaunching reads the app's settings on the main thread.
final class SettingsReadingDelegate: ApplicationDelegate {
    let path: String
    var window: Window?

    init(path: String) { self.path = path }

    func didFinishLaunching(_ application: Application, options: LaunchOptions) -> Bool {
        _ = try? SettingsStore.load(path)
        let window = Window(frame: Rect(x: 0, y: 0, width: 10, height: 10), name: "w")
        window.makeKeyAndVisible(in: application)
        self.window = window
        return true
    }
}

extension RuntimeTests {
    @Suite("Blocking calls during a launch")
    struct BlockingLaunchTests {
        @Test("an Application whose didFinishLaunching reads a file has disk-read-on-main in its launch profile")
        func launchReadsAFile() throws {
            let path = try BlockingFixtures.settingsFile()
            let recorder = try LaunchRecorder.start(configuration: SamplerConfiguration(rateHz: 1000))
            let driver = ApplicationDriver(delegate: SettingsReadingDelegate(path: path), recorder: recorder)
            defer { driver.close() }
            driver.send(.launch(LaunchOptions()))
            let profile = recorder.finish()
            let read = try #require(
                profile.violations.first { $0.rule == ThreadRules.diskReadOnMain && $0.message.contains(path) },
                "\(profile.violations.map(\.message))")
            #expect(read.stack != nil)
        }
    }
}
