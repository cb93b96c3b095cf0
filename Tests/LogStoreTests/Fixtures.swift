import Foundation
import LogStore
import XCTest

struct Restaurant: DataStoreItem, Equatable {
    var id: String
    var name: String
    var rating: Int
    var tags: [String] = []
}

struct Numbered: DataStoreItem, Equatable {
    var id: Int
    var value: String
}

struct Tagged: DataStoreItem, Equatable {
    static let itemType = "tagged-items"
    var id: UUID
    var note: String?
}

struct Marker: Error, Equatable { var n = 1 }

/// Makes stores for a test: on disk (a fresh temporary directory) or in memory.
enum StoreKind: CaseIterable, CustomStringConvertible {
    case disk, memory
    var description: String { self == .disk ? "disk" : "memory" }
}

final class StoreFactory {
    let kind: StoreKind
    let directory: URL
    var memory: LogDataStore?
    init(_ kind: StoreKind) {
        self.kind = kind
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-tests-\(UUID().uuidString)")
    }
    /// A new store object for the same location (a reopen, for disk; the same object for memory).
    func make(options: LogStoreOptions = .init()) -> LogDataStore {
        switch kind {
        case .disk: return LogDataStore(directory: directory, options: options)
        case .memory:
            if let m = memory { return m }
            let m = LogDataStore.inMemory(options: options)
            memory = m
            return m
        }
    }
    func cleanUp() { try? FileManager.default.removeItem(at: directory) }
}

class StoreTestCase: XCTestCase {
    var factories: [StoreFactory] = []
    override func tearDown() {
        for f in factories { f.cleanUp() }
        factories = []
        super.tearDown()
    }
    /// Runs `body` once per store kind with a set-up store.
    func forEachKind(options: LogStoreOptions = .init(), _ body: (StoreFactory, LogDataStore) throws -> Void) throws {
        for kind in StoreKind.allCases {
            let f = StoreFactory(kind)
            factories.append(f)
            let store = f.make(options: options)
            try store.setup()
            do {
                try body(f, store)
            } catch {
                XCTFail("\(kind) store: \(error)")
                throw error
            }
            try? store.tearDown()
        }
    }
}

func assertThrowsCode<T>(_ code: LogStoreError.Code, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> T) {
    do {
        _ = try body()
        XCTFail("expected \(code), nothing thrown", file: file, line: line)
    } catch let e as LogStoreError {
        XCTAssertEqual(e.code, code, "\(e)", file: file, line: line)
    } catch {
        XCTFail("expected LogStoreError \(code), got \(error)", file: file, line: line)
    }
}

func r(_ n: Int, rating: Int = 3) -> Restaurant { Restaurant(id: String(format: "r%03d", n), name: "Restaurant \(n)", rating: rating) }

func threadID() -> UInt { UInt(pthread_self()) }

/// Thread-safe collections for tests that write from several threads.
final class ManagedIDs: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var ids: [Int] = []
    func add(_ id: Int) { lock.withLock { ids.append(id) } }
    var all: [Int] { lock.withLock { ids } }
}

final class ManagedFlag: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var v = false
    var value: Bool { lock.withLock { v } }
    func set() { lock.withLock { v = true } }
}

final class ManagedCounter: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()
    private var v = 0
    var value: Int { lock.withLock { v } }
    func increment() { lock.withLock { v += 1 } }
}
