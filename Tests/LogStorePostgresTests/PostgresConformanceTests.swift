import DataStoreConformance
import Foundation
import LogStore
import Testing

/// The DataStore conformance suite on `PostgresDataStore`, on a schema of its own and as a child
/// store, against a real server (LOGSTORE_POSTGRES_URL).
@Suite(.serialized, .enabled(if: PostgresTestServer.isAvailable, Comment(rawValue: PostgresTestServer.skipReason)))
struct PostgresConformanceTests {
    @Test(arguments: DataStoreConformance.cases, PostgresDataStoreFactory.Mode.allCases)
    func conformance(_ check: ConformanceCase, _ mode: PostgresDataStoreFactory.Mode) async {
        await check.run(on: PostgresDataStoreFactory(mode: mode)) { failure in
            Issue.record(
                Comment(rawValue: failure.description),
                sourceLocation: SourceLocation(fileID: failure.fileID, filePath: failure.filePath, line: failure.line, column: 1))
        }
    }
}
