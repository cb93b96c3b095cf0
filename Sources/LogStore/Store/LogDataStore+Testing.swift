package import LogStoreEngine

extension LogDataStore {
    /// The engine at the root of this store's tree (for a child store, its root parent's), so
    /// that crash tests can drive `LogEngine.compact()` under a `DataStore` workload. Test
    /// support, not API: the SPI may change.
    ///
    /// Callable from any thread. Throws `.notOpen` if the store is not set up (or was torn down)
    /// and `.parentClosed` for a child whose parent was torn down. The engine returned stays
    /// valid until the store's `tearDown()`. `package` access: the crash tests and tools of this
    /// package reach it; apps do not.
    package func engineForTesting() throws -> LogEngine {
        try rootEngine()
    }
}
