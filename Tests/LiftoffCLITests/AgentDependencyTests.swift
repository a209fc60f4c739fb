import Foundation
import LiftoffProfile
import LiftoffTestSupport
import Testing

extension AgentPrograms {
    /// Spins in generated code (no call-frame information, a frame pointer) called by
    /// `outer_caller`, unless its argument is `plain`; at its end, says whether libunwind was loaded
    /// and how many pipes it has among its descriptors that it did not have when it began.
    static let generatedCode = """
        #include <dirent.h>
        #include <stdio.h>
        #include <stdint.h>
        #include <string.h>
        #include <sys/mman.h>
        #include <unistd.h>
        static void (*code)(uint64_t);
        // push rbp; mov rbp, rsp; 1: dec rdi; jnz 1b; pop rbp; ret
        static const unsigned char bytes[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0xff, 0xcf, 0x75, 0xfb, 0x5d, 0xc3};
        __attribute__((noinline)) void outer_caller(uint64_t n) { code(n); __asm__ volatile(""); }
        __attribute__((noinline)) void plain_loop(uint64_t n) { for (volatile uint64_t i = 0; i < n; i++) {} }
        static int pipes(void) {
            int count = 0;
            DIR *fds = opendir("/proc/self/fd");
            struct dirent *entry;
            while (fds && (entry = readdir(fds)) != NULL) {
                char path[300], target[64];
                snprintf(path, sizeof path, "/proc/self/fd/%s", entry->d_name);
                ssize_t length = readlink(path, target, sizeof target - 1);
                if (length > 0 && (target[length] = 0, strncmp(target, "pipe:", 5) == 0)) count++;
            }
            if (fds) closedir(fds);
            return count;
        }
        int main(int argc, char **argv) {
            int pipes_before = pipes();
            int plain = argc > 1 && strcmp(argv[1], "plain") == 0;
            void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            memcpy(page, bytes, sizeof bytes);
            code = (void (*)(uint64_t))page;
            for (int i = 0; i < 10; i++) plain ? plain_loop(5000000) : outer_caller(20000000);
            char line[4096];
            int loaded = 0;
            FILE *maps = fopen("/proc/self/maps", "r");
            while (maps && fgets(line, sizeof line, maps)) loaded |= strstr(line, "libunwind") != NULL;
            printf("libunwind: %s, new pipes: %d\\n", loaded ? "loaded" : "not loaded", pipes() - pipes_before);
            return 0;
        }
        """
}

/// What the injected agent brings into a process: the C library, and libunwind only when needed.
@Suite("The agent's dependencies", .serialized, .processState(timeLimit: .seconds(120)))
struct AgentDependencyTests {
    func profile(_ command: [String]) throws -> (status: Int32, stderr: String, profile: Profile?, log: String) {
        let out = temporaryFolder()
        let result = try BuiltTool.find().run(["profile", "--out", out.path, "--"] + command)
        let profile = try? Profile.load(from: out.appendingPathComponent("profile.json"))
        let log = (try? String(contentsOf: out.appendingPathComponent("output.log"), encoding: .utf8)) ?? ""
        return (result.status, result.stderr, profile, log)
    }

    @Test("the agent needs the C library alone and the audit library nothing: libunwind is loaded only when a stack runs through code without unwind tables, and then walks it")
    func libunwindOnDemand() throws {
        let agent = try BuiltTool.find().url.deletingLastPathComponent().appendingPathComponent("libLiftoffAgent.so").path
        let dynamic = try runToEnd("/usr/bin/readelf", ["-d", agent])
        let needed = dynamic.output.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        #expect(
            needed.allSatisfy { $0.contains("[libc.so.6]") || $0.contains("[ld-linux") }, "the agent's dependencies: \(needed)")
        // The audit library needs nothing at all: a library it needed would be searched for along
        // the RUNPATH the build gives it, in every launch.
        let audit = URL(fileURLWithPath: agent).deletingLastPathComponent().appendingPathComponent("libLiftoffAudit.so").path
        let auditNeeded = try runToEnd("/usr/bin/readelf", ["-d", audit]).output.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        #expect(auditNeeded.isEmpty, "the audit library's dependencies: \(auditNeeded)")

        let program = try AgentPrograms.build(
            "generated-code", source: AgentPrograms.generatedCode, ext: "c", compiler: "/usr/bin/cc", ["-O1", "-g", "-fno-omit-frame-pointer"])
        let plain = try profile([program, "plain"])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.log.contains("libunwind: not loaded"), "every stack walked by its tables: \(plain.log)")

        let generated = try profile([program])
        #expect(generated.status == 0, "\(generated.stderr)")
        #expect(generated.log.contains("libunwind: loaded"), "\(generated.log)")
        #if arch(x86_64)
        // libunwind checks the addresses it steps through by frame pointers through a pipe of its
        // own; the pipe it asks for is a stand-in, and none appears among the program's files.
        #expect(generated.log.contains("new pipes: 0"), "\(generated.log)")
        #endif
        let profile = try #require(generated.profile)
        var inGenerated = 0, walked = 0
        for sample in 0..<profile.samples.count where profile.samples.state[sample] == .running {
            let names = profile.frameIndices(ofStack: profile.samples.stack[sample]).map { profile.frames[$0].name }
            guard names.last?.hasPrefix("0x") == true else { continue }
            inGenerated += 1
            if names.contains("outer_caller") && names.contains("main") { walked += 1 }
        }
        // Only the samples before the sampler thread loaded libunwind (a tick or two) keep the
        // program counter alone.
        #expect(inGenerated >= 20, "samples in the generated code: \(inGenerated)")
        #expect(walked >= inGenerated - 3, "\(walked) of \(inGenerated) samples in generated code name its callers")
    }
}
