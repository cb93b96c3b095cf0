import LogStoreEngine

extension LogDataStore {
    /// What the last successful ``setup()`` did with the ``migrations``: the steps it applied, the
    /// ones applied before, unknown ones it was allowed to ignore, an erase, and the store's
    /// history. Nil before `setup()`, after `tearDown()`, and for a child store. A value; any
    /// thread.
    public var migrationReport: MigrationReport? {
        state.withLock { $0.backend == nil ? nil : $0.migrationReport }
    }

    /// The store's history (`StoreHistory`): the migrations it applied and the index
    /// declarations that changed, oldest first. Throws `.notOpen` before ``setup()``, and the
    /// store's read errors. Runs one `read` on the calling thread.
    public func history() throws -> [StoreHistory.Entry] {
        try DataStoreMigrations.history(of: self)
    }

    /// Applies the registered migrations to `backend`, which `setup()` has just opened and not yet
    /// published: through a store object of its own over the same backend, so that the steps use
    /// the DataStore protocol (as every backend's migrations do) while no other caller can see the
    /// store half migrated. Returns nil for a child store (which has no migrations of its own).
    func applyMigrations(on backend: StoreBackend) throws -> MigrationReport? {
        guard case .engine = backend else {
            guard migrations.names.isEmpty else {
                throw LogStoreError(
                    .invalidArgument,
                    "Migrations were registered on a child store. Register them on the root store: a child shows its parent's data, migrated by the parent's setup()."
                )
            }
            return nil
        }
        let migrating = LogDataStore(kind: kind, options: options)
        migrating.state.withLock { $0.backend = backend }
        // The backend stays open: it becomes this store's when the migrations are done.
        defer { migrating.state.withLock { $0.backend = nil } }
        return try migrations.apply(to: migrating, logger: options.logger)
    }
}
