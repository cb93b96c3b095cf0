package import LogStoreEngine

/// The errors of a store's lifecycle and of calls it refuses, written once for every backend and
/// every child store. Package API; each returns a new value.
package enum StoreErrors {
    /// A store used before `setup()` or after `tearDown()`; `path` and `underlying` name the
    /// file and the backend's own error when a backend found the store closed.
    package static func notOpen(path: String? = nil, underlying: (any Error)? = nil) -> LogStoreError {
        LogStoreError(
            .notOpen, "The store is not set up. Call setup() before using it (and not after tearDown()).", path: path,
            underlying: underlying)
    }

    /// A child store whose parent was torn down.
    package static func parentClosed() -> LogStoreError {
        LogStoreError(.parentClosed, "The parent of this child store was torn down. Make a new child store from a set-up parent.")
    }

    /// A `writeSync` (or a call that writes and waits, `what`) inside a write block of the same
    /// store: it would wait for itself.
    package static func reentrantWrite(_ what: String = "writeSync") -> LogStoreError {
        LogStoreError(
            .reentrantWrite,
            "\(what) was called from inside a write block of the same store; it would wait for itself forever. Do the work in the outer block, or after it returns (writeAsync queues it)."
        )
    }

    /// A `tearDown()` inside a block of the same store that it would wait for.
    package static func reentrantTearDown() -> LogStoreError {
        LogStoreError(
            .reentrantWrite,
            "tearDown() was called from inside a read or write block of the same store; it would wait for that block. Tear down after it returns."
        )
    }

    /// `merge(_:)` given a store that is not a child of the store merging.
    package static func notAChild() -> LogStoreError {
        LogStoreError(
            .notAChild,
            "merge(_:) was given a store that is not a child of this store. Merge a child into the store that made it (makeChildDataStore())."
        )
    }
}
