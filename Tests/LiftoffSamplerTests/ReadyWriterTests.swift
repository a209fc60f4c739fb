import Testing

@testable import LiftoffSampler

@Suite("The thread that wrote the ready line")
struct ReadyWriterTests {
    typealias Write = AgentRecording.OutputWrite

    @Test("a line written in pieces (Swift's print) matches when it is whole; the first thread to write a matching line is named")
    func pieces() {
        let writes = [
            Write(timeNs: 10, thread: 7, descriptor: 1, text: "starting\n"),
            // Thread 9 writes its line in three pieces while 8 writes another line between them.
            Write(timeNs: 20, thread: 9, descriptor: 1, text: "Server "),
            Write(timeNs: 21, thread: 8, descriptor: 1, text: "cache warm\n"),
            Write(timeNs: 22, thread: 9, descriptor: 1, text: "started on 8080"),
            Write(timeNs: 23, thread: 9, descriptor: 1, text: "\n"),
            Write(timeNs: 30, thread: 8, descriptor: 1, text: "Server started again\n"),
        ]
        let anchored = { (line: String) in line.hasPrefix("Server started") }
        #expect(AgentRecording.readyWriter(of: writes.shuffled(), descriptors: [1, 2], matches: anchored) == 9)
        #expect(AgentRecording.readyWriter(of: writes, descriptors: [1, 2], matches: { $0.contains("cache") }) == 8)
        #expect(AgentRecording.readyWriter(of: writes, descriptors: [1, 2], matches: { $0.contains("nothing") }) == nil)
    }

    @Test("only the watched stream counts, and a write of several lines is matched line by line")
    func streams() {
        let writes = [
            Write(timeNs: 10, thread: 3, descriptor: 2, text: "ready (a log line)\n"),
            Write(timeNs: 20, thread: 4, descriptor: 1, text: "loading\nready\nserving\n"),
        ]
        #expect(AgentRecording.readyWriter(of: writes, descriptors: [1], matches: { $0 == "ready" }) == 4)
        #expect(AgentRecording.readyWriter(of: writes, descriptors: [2], matches: { $0.hasPrefix("ready") }) == 3)
        #expect(AgentRecording.readyWriter(of: writes, descriptors: [2], matches: { $0 == "serving" }) == nil)
    }
}
