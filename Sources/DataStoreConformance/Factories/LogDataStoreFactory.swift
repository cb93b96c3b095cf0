import Foundation
public import LogStore

/// The conformance suite's factories for `LogDataStore`: in a temporary directory on disk, in
/// memory, or as a child store of an in-memory store. Also an example for backend authors.
public struct LogDataStoreFactory: DataStoreFactory {
    /// Where the stores live.
    public enum Mode: String, Sendable, CaseIterable {
        /// `LogDataStore(directory:)` in a new temporary directory; a reopen is a new object.
        case disk
        /// `LogDataStore.inMemory()`; a reopen is `tearDown()` and `setup()` of the same object.
        case memory
        /// A child store (`makeChildDataStore()`) of a new in-memory store.
        case child
    }

    /// The mode.
    public let mode: Mode
    /// The options every store is made with.
    public let options: LogStoreOptions

    /// A factory of `mode` stores with `options`.
    public init(_ mode: Mode, options: LogStoreOptions = LogStoreOptions()) {
        self.mode = mode
        self.options = options
    }

    /// `LogDataStore (disk)` and so on.
    public var name: String { "LogDataStore (\(mode.rawValue))" }

    /// Disk: everything. Memory: no lock (one object per place). Child: no reopen, no lock.
    public var capabilities: DataStoreCapabilities {
        switch mode {
        case .disk: return .durableStore
        case .memory: return [.persistsAcrossReopen, .childStores, .recordAccess, .observation, .secondaryIndexes]
        case .child: return [.childStores, .recordAccess, .isChildStore, .observation]
        }
    }

    /// See ``DataStoreFactory/makeLocation()``.
    public func makeLocation() throws -> any DataStoreLocation {
        switch mode {
        case .disk:
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-conformance-\(UUID().uuidString)")
            return DirectoryLocation(url: url, options: options)
        case .memory:
            let store = LogDataStore.inMemory(options: options)
            return SingleStoreLocation(store: store, migrating: store, parent: nil)
        case .child:
            let parent = LogDataStore.inMemory(options: options)
            try parent.setup()
            return SingleStoreLocation(store: try parent.makeChildDataStore(), parent: parent)
        }
    }

    /// A directory: every `makeStore()` is a new `LogDataStore` on it.
    final class DirectoryLocation: DataStoreLocation {
        let url: URL
        let options: LogStoreOptions
        let stores = SharedBox<[LogDataStore]>([])
        init(url: URL, options: LogStoreOptions) {
            self.url = url
            self.options = options
        }
        func makeStore() throws -> any DataStore { try makeLogDataStore() }
        func makeMigratingStore() throws -> (any MigratingDataStore)? { try makeLogDataStore() }
        func makeLogDataStore() throws -> LogDataStore {
            let s = LogDataStore(directory: url, options: options)
            stores.update { $0.append(s) }
            return s
        }
        func destroy() {
            for s in stores.value { try? s.tearDown() }
            try? FileManager.default.removeItem(at: url)
        }
    }

    /// One store object (in memory, or a child and the parent that keeps it alive).
    final class SingleStoreLocation: DataStoreLocation {
        let store: any DataStore
        let migrating: (any MigratingDataStore)?
        let parent: (any DataStore)?
        init(store: any DataStore, migrating: (any MigratingDataStore)? = nil, parent: (any DataStore)?) {
            self.store = store
            self.migrating = migrating
            self.parent = parent
        }
        func makeStore() throws -> any DataStore { store }
        func makeMigratingStore() throws -> (any MigratingDataStore)? { migrating }
        func destroy() {
            try? store.tearDown()
            try? parent?.tearDown()
        }
    }
}
