import Foundation
import LiftoffProfile
import Testing

extension AgentPrograms {
    /// With an argument `block`, blocks SIGPROF itself first; then goes on as itself with `report`
    /// (exec), which prints whether SIGPROF is blocked and pending, and the agent's hand-over
    /// variable: `sigprof blocked=<0|1> pending=<0|1> held=<value or ->`.
    static let execSignals = """
        #include <signal.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <unistd.h>
        int main(int argc, char **argv) {
            sigset_t set;
            if (argc > 1 && strcmp(argv[1], "report") == 0) {
                sigset_t blocked, pending;
                sigprocmask(SIG_BLOCK, NULL, &blocked);
                sigpending(&pending);
                const char *held = getenv("LIFTOFF_AGENT_SIGPROF_HELD");
                printf("sigprof blocked=%d pending=%d held=%s\\n", sigismember(&blocked, SIGPROF),
                       sigismember(&pending, SIGPROF), held ? held : "-");
                return 0;
            }
            if (argc > 1 && strcmp(argv[1], "block") == 0) {
                sigemptyset(&set);
                sigaddset(&set, SIGPROF);
                sigprocmask(SIG_BLOCK, &set, NULL);
            }
            // Long enough to be sampled, so the sampler is sending when the exec comes.
            volatile double sink = 0;
            for (long i = 0; i < 20000000; i++) sink += i * 0.5;
            execl(argv[0], argv[0], "report", (char *)NULL);
            return 1;
        }
        """
}

extension AgentTests {
    @Test("an exec under the agent holds SIGPROF across it: the new program starts with it unblocked and nothing pending, or blocked if the program blocked it")
    func execHoldsSigprof() throws {
        let program = try AgentPrograms.build(
            "exec-signals", source: AgentPrograms.execSignals, ext: "c", compiler: "/usr/bin/cc", ["-O1", "-g"])
        let plain = try profile([program], extra: ["--rate", "10000"])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.log.contains("sigprof blocked=0 pending=0 held=-"), "the agent released it: \(plain.log)")
        let blocked = try profile([program, "block"], extra: ["--rate", "10000"])
        #expect(blocked.status == 0, "\(blocked.stderr)")
        // A signal the sampler sent meanwhile may pend, as it would under any profiler: the mask is the program's.
        #expect(blocked.log.contains("sigprof blocked=1 pending=") && blocked.log.contains("held=-"), "the program's own mask stays: \(blocked.log)")
    }
}
