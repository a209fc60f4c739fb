import Foundation
import LiftoffAnalysis
import LiftoffProfile
import LiftoffTestSupport
import Testing

/// A C program that breaks the blocking-call rules on its main thread, and does the same read on
/// a thread of its own (no violation there).
enum RulesPrograms {
    static func blockingProgram() throws -> String {
        try AgentPrograms.build(
            "blockingmain",
            source: """
                #include <pthread.h>
                #include <sched.h>
                #include <stdio.h>
                #include <stdlib.h>
                #include <unistd.h>
                #include <fcntl.h>
                __attribute__((noinline)) long load_settings(const char *path) {
                    char buffer[4096];
                    long total = 0;
                    int fd = open(path, O_RDONLY);
                    if (fd < 0) return -1;
                    for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) total += n;
                    close(fd);
                    return total;
                }
                __attribute__((noinline)) void wait_for_network(void) { usleep(20000); }
                static void *worker(void *path) { load_settings(path); return NULL; }
                static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
                static volatile int holding;
                static void *holder(void *unused) {
                    pthread_mutex_lock(&state_lock);
                    holding = 1;
                    usleep(40000);
                    pthread_mutex_unlock(&state_lock);
                    return unused;
                }
                __attribute__((noinline)) void read_shared_state(void) {
                    pthread_mutex_lock(&state_lock);
                    pthread_mutex_unlock(&state_lock);
                }
                int main(int argc, char **argv) {
                    pthread_t thread;
                    pthread_create(&thread, NULL, worker, argv[1]);
                    pthread_join(thread, NULL);
                    long total = load_settings(argv[1]);
                    wait_for_network();
                    read_shared_state();
                    pthread_create(&thread, NULL, holder, NULL);
                    while (!holding) sched_yield();
                    read_shared_state();
                    pthread_join(thread, NULL);
                    printf("%ld\\n", total);
                    return total > 0 ? 0 : 1;
                }
                """, ext: "c", compiler: "/usr/bin/cc", ["-O1", "-g", "-pthread"])
    }
}

@Suite("Thread rules in a program under the agent", .serialized, .processState(timeLimit: .seconds(300)))
struct AgentRulesTests {
    private func profile(_ command: [String], rules: Bool) throws -> (status: Int32, stdout: String, profile: Profile?, out: URL) {
        let out = temporaryFolder()
        let result = try BuiltTool.find().run(["profile", "--out", out.path] + (rules ? ["--rules"] : []) + ["--"] + command)
        return (result.status, result.stdout, try? Profile.load(from: out.appendingPathComponent("profile.json")), out)
    }

    private func names(_ profile: Profile, _ violation: Profile.Violation) -> [String] {
        guard let stack = violation.stack else { return [] }
        return profile.frameIndices(ofStack: stack).map { profile.frames[$0].name }
    }

    @Test("--rules: the main thread's file read and sleep are violations whose stacks start at the program's function; the worker's read and the agent's own writes are not")
    func mainThreadBlockingCalls() throws {
        let program = try RulesPrograms.blockingProgram()
        let settings = temporaryFolder().appendingPathComponent("settings.txt")
        try String(repeating: "key = value\n", count: 4000).write(to: settings, atomically: true, encoding: .utf8)
        let run = try profile([program, settings.path], rules: true)
        #expect(run.status == 0, "\(run.stdout)")
        let profile = try #require(run.profile)
        // The open and the read loop are two statements of load_settings: two call sites.
        let reads = profile.violations.filter { $0.rule == .diskReadOnMain }
        #expect((1...2).contains(reads.count), "\(profile.violations.map(\.message))")
        #expect(reads.map(\.count).reduce(0, +) >= 3, "the open and each read: \(reads.map(\.count))")
        for read in reads {
            #expect(read.message.hasPrefix("reading \(settings.path) in UI context, on thread main"), "\(read.message)")
            #expect(read.threadID == profile.threads.first { $0.isMain }?.id)
            // Leaf last: the stack starts at the program's caller of the C library.
            #expect(names(profile, read).last == "load_settings", "\(names(profile, read))")
            #expect(names(profile, read).contains("main"))
        }
        let sleep = try #require(profile.violations.first { $0.rule == .sleepOnMain }, "\(profile.violations.map(\.message))")
        #expect(sleep.message.hasPrefix("usleep for 20.000 ms"), "\(sleep.message)")
        #expect(names(profile, sleep).last == "wait_for_network", "\(names(profile, sleep))")
        // The wait for the mutex the holder thread kept 40 ms, not the free lock before it.
        let locks = profile.violations.filter { $0.rule == .lockWaitOnMain }
        #expect(locks.count == 1 && locks.first?.count == 1, "\(profile.violations.map(\.message))")
        let lock = try #require(locks.first)
        #expect(lock.message.hasPrefix("pthread_mutex_lock waited "), "\(lock.message)")
        #expect(names(profile, lock).last == "read_shared_state", "\(names(profile, lock))")
        // The agent writes its recording on the main thread at exit: no finding of its own.
        #expect(!profile.violations.contains { $0.rule == .diskWriteOnMain }, "\(profile.violations.map(\.message))")
        // The insight, the summary, the Markdown and the HTML report say it, each at the program's function.
        let insight = try #require(Insights.of(profile).first { $0.id == "thread-rule-violation" }, "\(Insights.of(profile).map(\.id))")
        #expect(insight.finding.contains("reading \(settings.path)") || insight.evidence.notes.contains { $0.contains("reading \(settings.path)") },
                "\(insight.finding) \(insight.evidence.notes)")
        #expect((insight.finding + insight.evidence.notes.joined()).contains("load_settings"), "\(insight.finding) \(insight.evidence.notes)")
        #expect(run.stdout.contains("[thread-rule-violation]"), "\(run.stdout)")
        let markdown = try String(contentsOf: run.out.appendingPathComponent("summary.md"), encoding: .utf8)
        #expect(markdown.contains("disk-read-on-main") && markdown.contains("sleep-on-main"), "\(markdown)")
        let html = try String(contentsOf: run.out.appendingPathComponent("index.html"), encoding: .utf8)
        #expect(html.contains("\"disk-read-on-main\"") && html.contains("wait_for_network"), "the report's data holds the violations")
    }

    @Test("--rule checks only the rules it names, each with its policy: log prints a line at the call, trap stops the program with SIGTRAP and keeps the violation")
    func rulePolicies() throws {
        let program = try RulesPrograms.blockingProgram()
        let settings = temporaryFolder().appendingPathComponent("settings.txt")
        try "key = value\n".write(to: settings, atomically: true, encoding: .utf8)
        func run(_ rules: [String]) throws -> (result: (status: Int32, stdout: String, stderr: String), profile: Profile?) {
            let out = temporaryFolder()
            let result = try BuiltTool.find().run(["profile", "--out", out.path] + rules.flatMap { ["--rule", $0] } + ["--", program, settings.path])
            let log = (try? String(contentsOf: out.appendingPathComponent("output.log"), encoding: .utf8)) ?? ""
            return ((result.status, result.stdout + log, result.stderr), try? Profile.load(from: out.appendingPathComponent("profile.json")))
        }

        let logged = try run(["sleep-on-main=log"])
        #expect(logged.result.status == 0, "\(logged.result.stderr)")
        let violations = try #require(logged.profile).violations
        #expect(violations.map(\.rule) == [.sleepOnMain], "only the rule named: \(violations.map(\.message))")
        #expect(logged.result.stdout.contains("liftoff: sleep-on-main: "), "the line at the call: \(logged.result.stdout)")

        let trapped = try run(["disk-read-on-main", "sleep-on-main=trap"])
        let profile = try #require(trapped.profile, "\(trapped.result.stderr)")
        #expect(profile.processes.first?.signal == Int(SIGTRAP), "\(profile.processes)")
        #expect(profile.violations.contains { $0.rule == .sleepOnMain }, "the call that trapped: \(profile.violations.map(\.message))")
        #expect(profile.violations.contains { $0.rule == .diskReadOnMain }, "recorded before it: \(profile.violations.map(\.message))")
        #expect(!trapped.result.stdout.contains("liftoff: disk-read-on-main"), "record prints nothing: \(trapped.result.stdout)")

        let refused = try BuiltTool.find().run(["profile", "--rule", "sleep-on-main=panic", "--", program, settings.path])
        #expect(refused.status == 64 && refused.stderr.contains("the policy must be record, log, trap, not \"panic\""), "\(refused.stderr)")
    }

    @Test("without --rules, nothing is checked")
    func offByDefault() throws {
        let program = try RulesPrograms.blockingProgram()
        let settings = temporaryFolder().appendingPathComponent("settings.txt")
        try "key = value\n".write(to: settings, atomically: true, encoding: .utf8)
        let run = try profile([program, settings.path], rules: false)
        #expect(run.status == 0, "\(run.stdout)")
        #expect(try #require(run.profile).violations.isEmpty)
    }
}
