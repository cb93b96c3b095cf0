import LogStore
import LogStoreEngine

extension PostgresDataStore {
    /// Calls `body` with the sequence numbers of the commits the store publishes to its change
    /// feed (what every observer is handed), in the order and at the moment the feed gets them,
    /// from now until `tearDown()`; like an observer, it makes the store poll the other servers'
    /// commits. For tests of the publication order across processes. Throws `.notOpen`.
    package func tapCommitSequences(_ body: @escaping @Sendable ([UInt64]) -> Void) throws {
        try shell.currentBackend().session.publisher.attach { commits in body(commits.map(\.sequence)) }
    }
}
