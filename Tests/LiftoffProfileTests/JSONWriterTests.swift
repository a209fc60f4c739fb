import LiftoffProfile
import Testing

@Suite("JSON writer", .timeLimit(.minutes(5)))
struct JSONWriterTests {
    @Test("numbers print without trailing zeros and round to the requested digits")
    func numbers() {
        var writer = JSONWriter()
        for (value, digits) in [(0.0, 3), (1.5, 3), (-2.25, 1), (1234.5678, 3), (0.0004, 3), (0.0005, 3), (1e-9, 6), (.nan, 3)] {
            writer.number(value, digits: digits)
            writer.raw(" ")
        }
        writer.int(-42)
        writer.raw(" ")
        writer.unsigned(18_446_744_073_709_551_615)
        #expect(writer.text == "0 1.5 -2.3 1234.568 0 0.001 0 null -42 18446744073709551615")
    }

    @Test("strings escape quotes, backslashes and control characters; HTML-safe mode also <, >, & and line separators")
    func strings() {
        var plain = JSONWriter()
        plain.string("a\"b\\c\n\u{1}<&>\u{2028}é")
        #expect(plain.text == "\"a\\\"b\\\\c\\n\\u0001<&>\u{2028}é\"")
        var safe = JSONWriter(htmlSafe: true)
        safe.string("</script>&\u{2028}\u{2029}é")
        #expect(safe.text == "\"\\u003c/script\\u003e\\u0026\\u2028\\u2029é\"")
    }
}
