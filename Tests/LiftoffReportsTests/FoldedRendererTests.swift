import LiftoffProfile
import LiftoffTestSupport
import Testing

@testable import LiftoffReports
import LiftoffAnalysis

@Suite("Folded stacks", .timeLimit(.minutes(5)))
struct FoldedRendererTests {
    @Test("merged output is exact: sorted lines, integer counts, separators escaped")
    func merged() {
        #expect(FoldedRenderer.render(hostileProfile()) == """
            main;</script><script>alert(1)</script> 1
            main;a<b>&"c";semi%3Bcolon 4
            main;new%0Aline 1
            main;with\u{A0}space 2

            """)
    }

    @Test("an inlined function ends in _[i], as perf's stackcollapse marks it")
    func inlinedMarked() {
        var profile = launchProfile()
        profile.frames[2].isInlined = true
        let lines = FoldedRenderer.render(profile).split(separator: "\n")
        #expect(lines.contains("main;launch;parse_[i] 2"))
        #expect(lines.contains("main;launch 2"))
    }

    @Test("a row counts its weight: a wait of 40 ticks is 40 in wall-clock stacks and none in CPU ones")
    func weightsCounted() {
        var profile = launchProfile()
        profile.samples.append(thread: profile.samples.thread[0], timeNs: 10_000_000, stack: 2, state: .blocked, weight: 40)
        profile.samples.append(thread: profile.samples.thread[0], timeNs: 50_000_000, stack: 2, state: .runnable, weight: 3)
        let cpu = FoldedRenderer.render(profile).split(separator: "\n")
        let wall = FoldedRenderer.render(profile, samples: .wall).split(separator: "\n")
        #expect(cpu.contains("main;launch;parse 2"))
        #expect(wall.contains("main;launch;parse 45"))
        let tree = FlameTree(profile: profile, samples: .wall)
        let parse = tree.nodes.first { $0.name == "parse" }
        #expect(parse?.waiting == 43 && parse?.runnable == 3 && parse?.total == 45)
    }

    @Test("per-thread output puts each thread's stacks under an escaped thread frame")
    func perThread() {
        #expect(FoldedRenderer.render(hostileProfile(), perThread: true) == """
            main\u{A0}(1);main;</script><script>alert(1)</script> 1
            main\u{A0}(1);main;a<b>&"c";semi%3Bcolon 3
            main\u{A0}(1);main;new%0Aline 1
            work%3Ber\u{A0}(2);main;a<b>&"c";semi%3Bcolon 1
            work%3Ber\u{A0}(2);main;with\u{A0}space 2

            """)
    }

    @Test("every line splits into a stack and an integer count at its only space")
    func everyLineParses() {
        for perThread in [false, true] {
            let text = FoldedRenderer.render(hostileProfile(), perThread: perThread)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            var total = 0
            for line in lines {
                let parts = line.split(separator: " ")
                #expect(parts.count == 2, "\(line)")
                #expect(Int(parts[1]) != nil)
                total += Int(parts[1]) ?? 0
                #expect(!parts[0].split(separator: ";").contains { $0.isEmpty })
            }
            #expect(total == hostileProfile().samples.count)
        }
    }

    @Test("escaping is reversible: %, ; and control characters become %XX; spaces become no-break spaces")
    func escapeRules() {
        #expect(FoldedRenderer.escape("plain") == "plain")
        #expect(FoldedRenderer.escape("100%;\t\r") == "100%25%3B%09%0D")
        #expect(FoldedRenderer.escape("a b\u{A0}c") == "a\u{A0}b%C2%A0c")
        #expect(FoldedRenderer.escape("x\u{2028}y\u{85}z") == "x%E2%80%A8y%C2%85z", "Unicode line breaks too")
    }

    @Test("an empty profile gives empty text")
    func empty() {
        #expect(FoldedRenderer.render(emptyProfile()).isEmpty)
        #expect(FoldedRenderer.render(emptyProfile(), perThread: true).isEmpty)
    }
}
