import Foundation
import XCTest

@testable import LogStoreEngine

/// `EROFS` is reported as a read-only file system, not as a permissions problem.
final class ReadOnlyStoreTests: XCTestCase {
    func testEROFSIsReportedAsReadOnlyFileSystem() {
        let e = _ioError("open", EROFS, "/store/000001.log")
        XCTAssertEqual(e.code, .permissionDenied)
        XCTAssertTrue(e.message.contains("read-only"), e.message)
        XCTAssertFalse(e.message.contains("owner and mode"), e.message)
        let denied = _ioError("open", EACCES, "/store/000001.log")
        XCTAssertTrue(denied.message.contains("owner and mode"), denied.message)
    }

    func testWritabilityCheckSkipsFileSystemsWithoutPermissions() throws {
        let fs = InMemoryFileSystem()
        try fs.createDirectory(atPath: "/s")
        try LogEngine.checkWritable(directory: "/s", fs)
    }
}
