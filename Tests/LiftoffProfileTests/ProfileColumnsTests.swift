import Foundation
import LiftoffTestSupport
import Testing

@testable import LiftoffProfile

@Suite("The sample and stack tables read from the bytes")
struct ProfileColumnsTests {
    /// The tables as JSONDecoder reads them from the whole document.
    func decodedWhole(_ data: Data) throws -> Profile {
        var profile = try JSONDecoder().decode(Profile.self, from: data)
        try profile.validate()
        profile.shortenLongNames()
        profile.schema = Profile.currentSchema
        return profile
    }

    @Test("what the reader finds equals what JSONDecoder reads, for profiles as Liftoff writes them and for a schema /1 file")
    func sameAsJSONDecoder() throws {
        var documents = [
            try sampleProfile().jsonData(), try sampleProfile().jsonData(pretty: true),
            try Profile.synthetic(samples: 3_000, distinctStacks: 700, tasks: 8, threads: 3, seed: 11).jsonData(),
        ]
        documents.append(try Data(contentsOf: repositoryRoot.appendingPathComponent("Tests/Fixtures/profile-v1-demo.json")))
        for data in documents {
            let split = try #require(ProfileColumns.split(data), "the reader gave up on a document Liftoff wrote")
            let whole = try decodedWhole(data)
            #expect(split.samples == whole.samples)
            #expect(split.stacks == whole.stacks)
            #expect(try Profile.decode(data) == whole)
        }
    }

    @Test(
        "what Liftoff does not write is left to JSONDecoder, which reads it or says what is wrong",
        arguments: [
            ("a fraction", #""timeNs":[1.5]"#, false),
            ("an exponent", #""timeNs":[1e3]"#, true),
            ("a negative time", #""timeNs":[-1]"#, false),
            ("a leading zero", #""timeNs":[01]"#, false),
            ("a number past 64 bits", #""timeNs":[18446744073709551616]"#, false),
            ("a state no one knows", #""timeNs":[1],"state":[9]"#, false),
            ("a column no one knows", #""timeNs":[1],"extra":[1]"#, true),
            ("a column given twice", #""timeNs":[1],"timeNs":[1]"#, true),
            ("a null column", #""timeNs":[1],"task":null"#, true),
        ])
    func leftToJSONDecoder(_ kind: String, _ timeColumn: String, _ readable: Bool) throws {
        let text = #"{"schema":"liftoff.profile/3","metadata":{"liftoffVersion":"0.1.0","commandLine":["x"],"host":{"name":"h","os":"Linux","architecture":"x86_64","cpuCount":2},"startTime":"2026-01-01T00:00:00Z","buildConfiguration":"debug","samplingRateHz":1000},"timeOriginNs":0,"phases":{"processStartNs":0,"preMainNs":0,"mainEntryNs":0,"endNs":10},"threads":[{"id":1,"name":"main","isMain":true}],"frames":[{"name":"main","object":"x"}],"stacks":{"parent":[-1],"frame":[0]},"samples":{"thread":[1],"#
            + timeColumn + #","stack":[0]},"counts":{"signalsSent":0,"captured":0,"dropped":0,"failed":0,"skipped":0,"truncated":0,"waiting":0,"unanswered":0,"threadsSeen":0,"lostTaskEvents":0}}"#
        let data = Data(text.utf8)
        if kind == "a null column" {
            // A null optional column is what the reader reads too: absent.
            #expect(ProfileColumns.split(data) != nil)
        } else {
            #expect(ProfileColumns.split(data) == nil, "\(kind)")
        }
        if readable {
            #expect(throws: Never.self) { _ = try Profile.decode(data) }
        } else {
            #expect(throws: ProfileError.self) { _ = try Profile.decode(data) }
        }
    }
}

@Suite("Byte search")
struct ByteSearchTests {
    func find(_ word: String, in text: String) -> Bool {
        Array(word.utf8).withUnsafeBufferPointer { word in Array(text.utf8).withUnsafeBufferPointer { ByteSearch.find(word, in: $0) } }
    }

    @Test("a word is found at the start, the end and after false starts; not past the end, not when longer")
    func edges() {
        #expect(find("swift_retain", in: "swift_retain"))
        #expect(find("retain", in: "swift_retain"))
        #expect(find("aab", in: "aaaab"))
        #expect(find("sort", in: "Array.sort(by:)"))
        #expect(!find("retains", in: "swift_retain"))
        #expect(!find("swift_retain_n", in: "swift_retain"))
        #expect(!find("x", in: ""))
        #expect(find("", in: "anything"))
        #expect(!find("ab", in: "a"))
    }
}
