import Foundation
import LogStoreEngine

// LogDataStore as a provider of the change feed that observation and change tracking read
// (DataStoreChangeFeed's rules): one feed per opening of a backend, published to where commits
// become visible (the engine's publication hook, under its state lock; a child store's write and
// rebase, under its state lock), finished when the backend closes or can commit no more.

extension LogDataStore {
    /// See ``DataStore/changeFeed()``. Throws `.notOpen` before `setup()` and after `tearDown()`,
    /// `.parentClosed` for a child whose parent was torn down. O(1), any thread.
    public func changeFeed() throws -> DataStoreChangeFeed {
        try state.withLock { s in
            if let f = s.failure { throw f }
            guard let feed = s.feed else { throw Self.notOpenError() }
            return feed
        }
    }

    /// The feed of a backend that was just opened (before anyone can write to it): the engine's
    /// commits reach it through the publication hook, a child's from its own writes.
    func makeFeed(for backend: StoreBackend) throws -> DataStoreChangeFeed {
        switch backend {
        case .engine(let engine):
            let feed = DataStoreChangeFeed(
                storeIdentity: engine.storeIdentifier, sequence: try engine.snapshot().sequence, retention: options.changeHistory,
                recordsWrites: false,
                snapshot: { [weak engine] in
                    guard let engine else { throw Self.notOpenError() }
                    return ReaderSnapshot.engine(try engine.snapshot())
                })
            _ = engine.setPublicationObserver { [weak feed] event in
                switch event {
                case .published(let commits): feed?.publish(commits)
                case .poisoned(let error): feed?.finish(throwing: error)
                }
            }
            return feed
        case .child(let child):
            let feed = DataStoreChangeFeed(
                storeIdentity: "child-\(UUID().uuidString)", sequence: try child.readView().sequence, retention: options.changeHistory,
                recordsWrites: true,
                snapshot: { [weak child] in
                    guard let child else { throw Self.notOpenError() }
                    return ReaderSnapshot.child(try child.readView())
                })
            child.attach(feed)
            return feed
        }
    }
}
