extension Profile {
    /// A large profile of a known shape, for trying renderers and viewers at scale: `samples`
    /// samples spread round-robin over `threads` threads at 1 kHz, in runs of five drawn from
    /// `distinctStacks` stacks that extend each other by one to three frames (2,000 distinct
    /// function names); `tasks` tasks spread over the threads one after another, each waiting
    /// for the one before it on its thread. The same arguments always give the same profile.
    ///
    /// ```swift
    /// let big = Profile.synthetic(samples: 1_000_000, distinctStacks: 50_000, tasks: 10_000)
    /// ```
    public static func synthetic(samples: Int, distinctStacks: Int, tasks: Int, threads: Int = 4, seed: UInt64 = 42) -> Profile {
        let threads = max(threads, 1)
        let distinctStacks = max(distinctStacks, 1)
        var generator = SplitMix64(seed: seed)
        var frames = (0..<2_000).map { Profile.Frame(name: "Module.function\($0)(argument:)", object: "app") }
        frames.append(Profile.Frame(name: "main", object: "app"))
        var stacks = Profile.StackTable()
        stacks.parent.append(-1)
        stacks.frame.append(frames.count - 1)
        var leaves: [Int] = []
        while leaves.count < distinctStacks {
            // Extend a random existing stack (or the root) by a few frames.
            var stack = leaves.isEmpty || generator.next() % 4 == 0 ? 0 : leaves[Int(generator.next() % UInt64(leaves.count))]
            for _ in 0..<(1 + Int(generator.next() % 3)) {
                stacks.parent.append(stack)
                stacks.frame.append(Int(generator.next() % 2_000))
                stack = stacks.count - 1
            }
            leaves.append(stack)
        }
        var table = Profile.SampleTable()
        table.thread.reserveCapacity(samples)
        for index in 0..<samples {
            // Runs of the same stack, as real threads have; one run in four waits.
            let run = index / (threads * 5)
            table.append(
                thread: 1 + index % threads, timeNs: UInt64(index / threads) * 1_000_000,
                stack: leaves[Int((UInt64(run) &* 2_654_435_761 &+ UInt64(index % threads)) % UInt64(leaves.count))],
                state: run % 4 == 3 ? .blocked : .running, cpuNs: run % 4 == 3 ? 0 : 1_000_000)
        }
        let duration = UInt64(samples / threads) * 1_000_000
        var profile = Profile(
            metadata: Profile.Metadata(
                liftoffVersion: "0.1.0", commandLine: ["/usr/bin/big"],
                host: Profile.Host(name: "box", os: "Linux", architecture: "x86_64", cpuCount: 2),
                startTime: "2026-11-21T10:00:00.000Z", buildConfiguration: "release", samplingRateHz: 1000),
            timeOriginNs: 0,
            phases: Profile.Phases(
                processStartNs: 0, preMainNs: 0, mainEntryNs: 1_000_000, endNs: duration, firstFrameNs: duration / 2),
            threads: (1...threads).map { Profile.ThreadInfo(id: $0, name: $0 == 1 ? "main" : "worker", isMain: $0 == 1) },
            frames: frames, stacks: stacks, samples: table)
        let slot = duration / UInt64(max(tasks, 1)) * UInt64(threads)
        profile.tasks = (0..<tasks).map { index in
            let thread = 1 + index % threads
            let start = UInt64(index / threads) * slot
            return Profile.TaskRecord(
                name: "task \(index)", lane: thread == 1 ? .main : .background(qos: "utility"), status: .completed,
                dependencies: index >= threads ? ["task \(index - threads)"] : [], threadID: thread,
                threadName: thread == 1 ? "main" : "worker", readyNs: start, startNs: start, endNs: start + slot / 2,
                cpuNs: slot / 3, onCriticalPath: index % 7 == 0, slackNs: 0, couldDefer: index % 5 == 0)
        }
        return profile
    }
}
