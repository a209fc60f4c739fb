import Foundation

/// The folder this test process writes its files under, `liftoff-tests-PID` in the temporary
/// directory: removed when the process exits, so that test runs do not fill it.
public let testScratch: URL = {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("liftoff-tests-\(getpid())")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    atexit { removeTestScratch() }
    return url
}()

private func removeTestScratch() {
    try? FileManager.default.removeItem(at: testScratch)
}
