import Foundation
import LiftoffProfile
import Synchronization
import Testing

@testable import LiftoffSampler

extension SamplerTests {
    /// A 64 MB file of random bytes on a disk-backed file system, written through to the disk.
    static func randomFile() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("liftoff-sampler-random-64M.bin").path
        if FileManager.default.fileExists(atPath: path) { return path }
        let fd = open(path + ".tmp", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(fd >= 0)
        var generator = SystemRandomNumberGenerator()
        var chunk = [UInt64](repeating: 0, count: 1 << 17)  // 1 MB
        for _ in 0..<64 {
            for index in chunk.indices { chunk[index] = generator.next() }
            let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            try #require(written == 1 << 20)
        }
        try #require(fsync(fd) == 0 && close(fd) == 0)
        try #require(rename(path + ".tmp", path) == 0)
        return path
    }

    /// Ticks of a thread that reads 2,000 random pages of the file, evicted first, through a
    /// mapping, sampled at 1 kHz, by state.
    func faultingTicks(checksDiskWaits: Bool) throws -> [Profile.SampleState: Int] {
        let path = try Self.randomFile()
        let fd = open(path, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        // Its pages are clean and mapped by nobody: the kernel drops them, no root needed.
        try #require(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0)
        let size = 64 << 20
        let mapping = try #require(mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0))
        defer { munmap(mapping, size) }
        madvise(mapping, size, MADV_RANDOM)
        // An address, which a thread may read through: the mapping outlives the thread.
        let address = UInt(bitPattern: mapping)
        try Sampler.start(SamplerConfiguration(rateHz: 1000, checksDiskWaits: checksDiskWaits))
        let tid = Mutex(0)
        onNewThread(name: "faulting") {
            try? Sampler.registerCurrentThread(name: "faulting")
            tid.withLock { $0 = CurrentThread.id }
            var generator = SystemRandomNumberGenerator()
            var sum: UInt64 = 0
            let bytes = UnsafeRawPointer(bitPattern: address)!
            for _ in 0..<2000 { sum &+= UInt64(bytes.load(fromByteOffset: Int.random(in: 0..<(size >> 12), using: &generator) << 12, as: UInt8.self)) }
            workSink.wrappingAdd(sum, ordering: .relaxed)
            try? Sampler.unregisterCurrentThread()
        }
        let recording = Sampler.stop()
        let thread = tid.withLock { $0 }
        var ticks: [Profile.SampleState: Int] = [:]
        for sample in recording.samples where sample.threadID == thread { ticks[sample.state, default: 0] += Int(sample.weight) }
        return ticks
    }

    @Test("page faults that read from storage are disk waits with the state check, and no disk wait is told without it")
    func diskCheckOption() throws {
        let unchecked = try faultingTicks(checksDiskWaits: false)
        let checked = try faultingTicks(checksDiskWaits: true)
        #expect(checked[.disk, default: 0] > 0, "the faults waited for the disk: \(checked)")
        // Unchecked, a late answer's ticks are split by the run-queue wait alone: a disk wait,
        // which is no run-queue wait, counts as running.
        #expect(unchecked[.disk, default: 0] == 0, "no state was read: \(unchecked)")
        #expect(unchecked[.running, default: 0] > 0, "\(unchecked)")
    }
}
