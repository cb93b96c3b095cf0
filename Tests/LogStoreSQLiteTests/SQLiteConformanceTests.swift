import DataStoreConformance
import Foundation
import LogStore
import LogStoreSQLite
import Testing

/// Makes `SQLiteDataStore`s for the conformance suite: a file in a new temporary directory, or a
/// child store of one.
struct SQLiteDataStoreFactory: DataStoreFactory {
    enum Mode: String, Sendable, CaseIterable {
        case file, child
    }
    let mode: Mode
    var options = DataStoreOptions()

    var name: String { "SQLiteDataStore (\(mode.rawValue))" }

    var capabilities: DataStoreCapabilities {
        mode == .file ? DataStoreCapabilities.durableStore : [.childStores, .recordAccess, .isChildStore, .observation]
    }

    func makeLocation() throws -> any DataStoreLocation {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-sqlite-conformance-\(UUID().uuidString)")
        let location = FileLocation(directory: dir, options: options)
        guard mode == .child else { return location }
        return try ChildStoreLocation(childOf: location)
    }

    final class FileLocation: DataStoreLocation {
        let directory: URL
        let options: DataStoreOptions
        let stores = SharedBox<[SQLiteDataStore]>([])
        init(directory: URL, options: DataStoreOptions) {
            self.directory = directory
            self.options = options
        }
        func makeStore() throws -> any DataStore { try makeSQLiteStore() }
        func makeMigratingStore() throws -> (any MigratingDataStore)? { try makeSQLiteStore() }
        func makeSQLiteStore() throws -> SQLiteDataStore {
            let s = SQLiteDataStore(url: directory.appendingPathComponent("store.sqlite"), options: options)
            stores.update { $0.append(s) }
            return s
        }
        func destroy() {
            for s in stores.value { try? s.tearDown() }
            try? FileManager.default.removeItem(at: directory)
        }
    }
}

/// The DataStore conformance suite on `SQLiteDataStore`, as a file and as a child store.
@Suite(.serialized)
struct SQLiteConformanceTests {
    @Test(arguments: DataStoreConformance.cases, SQLiteDataStoreFactory.Mode.allCases)
    func conformance(_ check: ConformanceCase, _ mode: SQLiteDataStoreFactory.Mode) async {
        await check.run(on: SQLiteDataStoreFactory(mode: mode)) { failure in
            Issue.record(
                Comment(rawValue: failure.description),
                sourceLocation: SourceLocation(fileID: failure.fileID, filePath: failure.filePath, line: failure.line, column: 1))
        }
    }
}
