import Foundation
import XCTest

/// A test case whose temporary directories (``newDirectory()``) are removed after each test.
class TemporaryDirectoryTestCase: XCTestCase {
    var directories: [URL] = []

    override func tearDown() {
        for d in directories { try? FileManager.default.removeItem(at: d) }
        directories = []
        super.tearDown()
    }

    /// A path in the temporary directory that does not exist yet (not created), removed after
    /// the test.
    func newDirectory() -> URL {
        let d = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-enc-\(UUID().uuidString)")
        directories.append(d)
        return d
    }

    /// ``newDirectory()``, created.
    func newCreatedDirectory() throws -> URL {
        let d = newDirectory()
        try FileManager.default.createDirectory(at: d, withIntermediateDirectories: true)
        return d
    }
}
