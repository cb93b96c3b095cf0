package import LogStoreEngine

/// A backend whose write transactions are durable when they return, run through a write
/// accessor of its own: the SQL backends. It provides ``transaction(_:)``; the writes, merges and
/// nuke of ``DataStoreBackend`` follow from it here, once for all of them. Package API.
package protocol TransactionalBackend: DataStoreBackend {
    /// The accessor a write transaction runs with.
    associatedtype WriteAccessor: TransactionWriteAccessor
    /// Runs `body` as one write transaction on the calling thread and returns its value once the
    /// commit is durable. Throws `.reentrantWrite` inside a write block of this backend, the
    /// backend's commit errors, or `body`'s error unchanged (rolled back).
    func transaction<T>(_ body: (WriteAccessor) throws -> T) throws -> T
}

/// What the shared writes of a ``TransactionalBackend`` need of its write accessor, besides the
/// DataStore accessor it is.
package protocol TransactionWriteAccessor: DataStoreReadWriteAccessor {
    /// Whether record (`type`, `key`) changed after `base`, a snapshot of this backend that a
    /// child store started from (``ChildMerge/ChangedSince``), as this transaction sees it.
    func changedSince(base: any RecordReader, type: String, key: RecordKey) throws -> Bool
    /// Applies merged operations (a child's changes) in this transaction.
    func apply(_ operations: [RecordOperation]) throws
    /// Deletes every item of every type in this transaction (the store's history stays).
    func deleteEverything() throws
}

extension TransactionalBackend {
    /// See ``DataStoreBackend/write(_:)``: one transaction.
    package func write<T>(_ block: (any DataStoreReadWriteAccessor) throws -> T) throws -> T {
        try transaction { try block($0) }
    }

    /// See ``DataStoreBackend/write(_:onDurable:)``: the commit is durable when the transaction
    /// returns, so `onDurable` is called right after it.
    package func write<T>(_ block: (any DataStoreReadWriteAccessor) throws -> T, onDurable: @escaping @Sendable ((any Error)?) -> Void)
        throws -> T
    {
        let value = try transaction { try block($0) }
        onDurable(nil)
        return value
    }

    /// See ``DataStoreBackend/merge(_:)``: one transaction, with the accessor's conflict test
    /// (it runs again with the transaction when the backend retries it).
    package func merge(_ plan: (_ changedSince: ChildMerge.ChangedSince) throws -> [RecordOperation]?) throws {
        try transaction { accessor in
            guard let operations = try plan({ base, type, key in try accessor.changedSince(base: base, type: type, key: key) }) else {
                return
            }
            try accessor.apply(operations)
        }
    }

    /// See ``DataStoreBackend/deleteEverything()``.
    package func deleteEverything() throws {
        try transaction { try $0.deleteEverything() }
    }
}
