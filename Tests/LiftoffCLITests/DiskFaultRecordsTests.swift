import Foundation
import LiftoffProfile
import Testing

@testable import LiftoffCLI

/// Reading the kernel's page-fault records and placing each fault in the file it read.
@Suite("Disk fault records")
struct DiskFaultRecordsTests {
    /// Builds records as the kernel lays them out for the event `lo_faults_open` opens.
    struct Records {
        var bytes: [UInt8] = []

        mutating func header(_ type: UInt32, misc: UInt16 = 0, size: Int) {
            append(type)
            append(misc)
            append(UInt16(size))
        }
        mutating func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        mutating func trailer(pid: UInt32, ns: UInt64) {
            append(pid)
            append(pid)
            append(ns)
        }
        mutating func mapping(pid: UInt32, start: UInt64, length: UInt64, offset: UInt64, path: String, ns: UInt64) {
            var name = Array(path.utf8) + [0]
            while name.count % 8 != 0 { name.append(0) }
            header(10, size: 72 + name.count + 16)
            append(pid)
            append(pid)
            append(start)
            append(length)
            append(offset)
            bytes.append(contentsOf: [UInt8](repeating: 0, count: 32))  // device, inode, protection, flags
            bytes.append(contentsOf: name)
            trailer(pid: pid, ns: ns)
        }
        mutating func exec(pid: UInt32, ns: UInt64) {
            header(3, misc: 1 << 13, size: 8 + 8 + 16 + 16)
            append(pid)
            append(pid)
            bytes.append(contentsOf: Array("program\0".utf8) + [UInt8](repeating: 0, count: 8))
            trailer(pid: pid, ns: ns)
        }
        mutating func fork(pid: UInt32, parent: UInt32, ns: UInt64) {
            header(7, size: 32 + 16)
            append(pid)
            append(parent)
            append(pid)
            append(parent)
            append(ns)
            trailer(pid: pid, ns: ns)
        }
        mutating func fault(pid: UInt32, address: UInt64, ns: UInt64) {
            header(9, size: 40)
            append(UInt64(0x1234))
            append(pid)
            append(pid)
            append(ns)
            append(address)
        }
        mutating func lost(_ count: UInt64, ns: UInt64) {
            header(2, size: 24 + 16)
            append(UInt64(1))
            append(count)
            trailer(pid: 0, ns: ns)
        }
    }

    @Test("faults are placed in the newest mapping that covers them, per process, at page offsets in the file; a fork inherits its parent's mappings, an exec forgets them; faults before the first exec are the launcher's, and those after ready are only counted")
    func placing() {
        var records = Records()
        let origin: UInt64 = 1_000_000
        records.fault(pid: 10, address: 0x5000, ns: origin + 10)  // the forked launcher, before exec
        records.exec(pid: 10, ns: origin + 20)
        records.mapping(pid: 10, start: 0x40_0000, length: 0x10000, offset: 0x2000, path: "/usr/bin/app", ns: origin + 30)
        records.mapping(pid: 10, start: 0x7000_0000, length: 0x100000, offset: 0, path: "/usr/lib/libbig.so", ns: origin + 40)
        records.fault(pid: 10, address: 0x40_3123, ns: origin + 50)  // before main: app at 0x2000 + 0x3000
        records.fault(pid: 10, address: 0x7000_8004, ns: origin + 500)  // after main
        records.mapping(pid: 10, start: 0x9000_0000, length: 0x1000, offset: 0, path: "//anon", ns: origin + 510)
        records.fault(pid: 10, address: 0x9000_0010, ns: origin + 520)  // anonymous
        records.fork(pid: 11, parent: 10, ns: origin + 600)
        records.fault(pid: 11, address: 0x7000_1000, ns: origin + 610)  // the child, in the parent's mapping
        records.exec(pid: 11, ns: origin + 700)
        records.fault(pid: 11, address: 0x7000_2000, ns: origin + 710)  // after exec: nothing mapped there
        records.lost(3, ns: origin + 800)
        // A second CPU's ring comes after the first's: the reading sorts them by time.
        var later = Records()
        later.mapping(pid: 10, start: 0x7000_0000, length: 0x1000, offset: 0x80000, path: "/data/table.bin", ns: origin + 900)
        later.fault(pid: 10, address: 0x7000_0042, ns: origin + 910)  // the newer mapping wins
        later.fault(pid: 10, address: 0x7000_0042, ns: origin + 960)  // after ready: counted only
        let events = (records.bytes + later.bytes).withUnsafeBytes { DiskFaultRecords.parse($0) }
        #expect(events.map(\.ns) == events.map(\.ns).sorted())

        let placed = DiskFaultRecords.place(events, originNs: origin, readyNs: 950) { pid, _ in pid == 10 ? 100 : nil }
        let byPath = Dictionary(uniqueKeysWithValues: placed.files.map { ($0.path, $0) })
        #expect(byPath["/usr/bin/app"] == Profile.FaultedFile(path: "/usr/bin/app", faults: 1, beforeMain: 1, offsets: [0x5000], processIDs: [10], firstNs: 50))
        let big = byPath["/usr/lib/libbig.so"]
        #expect(big?.faults == 2 && big?.beforeMain == 0 && big?.offsets == [0x8000, 0x1000] && big?.processIDs == [10, 11], "\(String(describing: big))")
        #expect(byPath["/data/table.bin"]?.offsets == [0x80000])
        #expect(placed.files.first?.path == "/usr/lib/libbig.so", "the most faults first")
        #expect(placed.anonymous == 2, "the anonymous mapping's fault and the one after the child's exec")
        #expect(placed.lost == 3)
        #expect(placed.total == 6 && placed.afterReady == 1)
    }

    @Test("a record cut short or with an impossible size ends the reading without a trap")
    func truncated() {
        var records = Records()
        records.exec(pid: 1, ns: 5)
        records.fault(pid: 1, address: 0x1000, ns: 6)
        let whole = records.bytes
        for cut in 0..<whole.count {
            let events = Array(whole.prefix(cut)).withUnsafeBytes { DiskFaultRecords.parse($0) }
            #expect(events.count <= 2)
        }
        var bad = whole
        bad[6] = 0xff
        bad[7] = 0xff  // the first record claims 65,535 bytes
        #expect(bad.withUnsafeBytes { DiskFaultRecords.parse($0) }.isEmpty)
        var tiny = whole
        tiny[6] = 2
        tiny[7] = 0  // smaller than its header
        #expect(tiny.withUnsafeBytes { DiskFaultRecords.parse($0) }.isEmpty)
    }

    @Test("the summary names the files the most faults read, and says a refusal only when the launch read from storage")
    func sentence() {
        var profile = Profile.synthetic(samples: 20, distinctStacks: 4, tasks: 1)
        profile.diskFaults = Profile.DiskFaults(
            files: [Profile.FaultedFile(path: "/usr/lib/libbig.so", faults: 5, beforeMain: 2, offsets: [0], processIDs: [1], firstNs: 0)],
            anonymous: 1, lost: 2)
        let line = DiskFaultRecords.sentence(profile) ?? ""
        #expect(line.hasPrefix("Page faults that read from storage: at least 6 (2 before main), in libbig.so 5 (2 before main)"), "\(line)")
        #expect(line.contains("dropped 2 records"), "\(line)")
        let refusal = DiskFaultRecords.Refusal(code: EACCES).sentence
        #expect(refusal.contains("perf_event_paranoid") && refusal.hasSuffix(")."), "\(refusal)")
        profile.diskFaults = Profile.DiskFaults(refused: refusal)
        #expect(DiskFaultRecords.sentence(profile) == nil, "nothing read, nothing to say")
        profile.phases.preMain = Profile.PreMain(durationNs: 1, onCPUNs: 0, runnableNs: 0, blockedNs: 1, bytesRead: 4096, majorFaults: 1, minorFaults: 0)
        #expect(DiskFaultRecords.sentence(profile) == refusal, "the launch read from storage: the refusal is said")
    }

    @Test("the summary says where a ready mark came from: an output line matching --ready, or the program's own LaunchRecorder")
    func readySource() {
        var profile = Profile.synthetic(samples: 20, distinctStacks: 4, tasks: 1)
        profile.marks = [Profile.Mark(name: .ready, timeNs: 500_000)]
        #expect(DemoCommand.summary(profile, result: nil, folder: "/tmp").contains("Ready at 0.5 ms (its first output line matching --ready)."))
        #expect(
            DemoCommand.summary(profile, result: nil, folder: "/tmp", readyByRecorder: true)
                .contains("Ready at 0.5 ms (when it called LaunchRecorder's ready()).")
        )
    }
}
