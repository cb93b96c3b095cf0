import LogStoreEngine

/// A store that makes child stores: it hands out overlays over its committed state and keeps
/// track of its children, so that tearing it down fails them with `.parentClosed`. Every
/// ``StoreShell`` is one, whatever its backend (a child store's too: grandchildren). Package API;
/// any thread.
package protocol ChildParent: AnyObject, Sendable {
    /// A new overlay over this store's committed state as of now. Throws `.notOpen` (or the
    /// store's failure) when this store is not usable, and its backend's read errors.
    func makeOverlay() throws -> ChildBackend
    /// Records `child` so that a later `tearDown()` invalidates it. Throws `.notOpen` if this
    /// store was torn down meanwhile.
    func adopt(_ child: ChildDataStore) throws
    /// The options this store's children take.
    var options: DataStoreOptions { get }
}

extension StoreShell: ChildParent {
    /// See ``ChildParent/makeOverlay()``: the backend's snapshot, limits and spill location.
    package func makeOverlay() throws -> ChildBackend {
        let backend = try currentBackend()
        return ChildBackend(base: try backend.childBase(), limits: backend.limits, options: options, spillLocation: backend.spillLocation)
    }

    /// See ``ChildParent/adopt(_:)``.
    package func adopt(_ child: ChildDataStore) throws {
        try state.withLock { s in
            if let f = s.failure { throw f }
            guard s.backend != nil else { throw StoreErrors.notOpen() }
            s.children.removeAll { $0.store == nil }
            s.children.append(WeakChild(child))
        }
    }

    /// See `DataStore.makeChildDataStore()`: a child over this store's committed state now, set
    /// up and adopted. O(1) on the engine (a snapshot); a read transaction held open on a
    /// database. Throws `.notOpen`, `.parentClosed`, and the backend's errors of taking the
    /// snapshot.
    package func makeChild() throws -> ChildDataStore {
        let child = ChildDataStore(parent: self)
        try child.shell.setup()
        try adopt(child)
        return child
    }

    /// See `DataStore.merge(_:policy:)`: finds `child` among this store's children (by identity,
    /// no type test) and runs ``ChildMerge`` into this store's backend. Throws `.notAChild`
    /// (changing nothing), `.notOpen`, `.parentClosed`, `.reentrantWrite`, `.mergeConflict`, and
    /// the backend's write errors.
    package func merge(_ child: any DataStore, policy: MergePolicy) throws {
        let backend = try currentBackend()
        let registered = state.withLock { s in s.children.first { $0.store === child }?.store }
        guard let registered else { throw StoreErrors.notAChild() }
        try ChildMerge.run(child: registered, into: backend, policy: policy, parentQueue: writeQueue)
    }
}
