import DataStoreConformance
import LogStore
import Testing

/// The DataStore conformance suite (DataStoreConformance) on `LogDataStore` on disk, in memory
/// and as a child store: one test per case and mode.
@Suite(.serialized)
struct LogDataStoreConformanceTests {
    @Test(arguments: DataStoreConformance.cases, LogDataStoreFactory.Mode.allCases)
    func conformance(_ check: ConformanceCase, _ mode: LogDataStoreFactory.Mode) async {
        await check.run(on: LogDataStoreFactory(mode)) { failure in
            Issue.record(
                Comment(rawValue: failure.description),
                sourceLocation: SourceLocation(fileID: failure.fileID, filePath: failure.filePath, line: failure.line, column: 1))
        }
    }
}
