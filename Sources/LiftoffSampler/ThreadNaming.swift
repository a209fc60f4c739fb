import CLiftoffSampler

/// Names of sampled threads, as the kernel knows them, made readable.
enum ThreadNaming {
    /// The kernel names (`comm`) of the threads the last session found, by kernel thread id.
    /// libdispatch names its workers after their root queue and Linux keeps the last 15
    /// characters (`-qos.overcommit`); such names become `dispatch worker (…)`.
    static func kernelNames() -> [Int: String] {
        var names: [Int: String] = [:]
        var buffer = [CChar](repeating: 0, count: 32)
        var index = 0
        var tid: pid_t = 0
        while lo_sampler_thread_name(index, &tid, &buffer, buffer.count) != 0 {
            let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            names[Int(tid)] = readable(name, isMain: tid == lo_main_tid())
            index += 1
        }
        return names
    }

    /// libdispatch's root queues, whose labels its workers take as thread names.
    static let rootQueues = [
        "maintenance-qos", "background-qos", "utility-qos", "default-qos", "user-initiated-qos",
        "user-interactive-qos",
    ].flatMap { ["com.apple.root.\($0)", "com.apple.root.\($0).overcommit"] }

    /// A kernel thread name as people should read it: `main` for the main thread, and a
    /// Dispatch worker's cut root-queue label restored where only one label ends that way.
    static func readable(_ name: String, isMain: Bool) -> String {
        if isMain { return "main" }
        guard !name.isEmpty else { return name }
        // A cut label is exactly as long as the kernel keeps: a program's own short thread name
        // ("t", "qos") that happens to end a label is its own.
        let cut = name.utf8.count == 15
        let matches = rootQueues.filter { cut && $0.hasSuffix(name) && $0.count > name.count || $0 == name }
        guard !matches.isEmpty else { return name }
        if matches.count == 1 {
            return "dispatch worker (\(matches[0].dropFirst("com.apple.root.".count)))"
        }
        return name.hasSuffix(".overcommit") ? "dispatch worker (overcommit)" : "dispatch worker"
    }
}
