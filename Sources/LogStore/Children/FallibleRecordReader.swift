package import LogStoreEngine

/// A `RecordReader` whose non-throwing methods (`count(ofType:)`, `contains(type:key:)`,
/// `keys(ofType:)`, `itemTypes`, `forEachKeyInOrder`) can fail: a view of a database read through
/// queries (the SQLite backend's snapshots), where even counting reads the disk.
///
/// Such a reader remembers its first failure, answers those methods with a harmless value (0,
/// false, none) from then on, and throws the failure from ``checkHealthy()`` and from every
/// throwing method. Whoever hands out answers computed from it (the DataStore accessors, a child
/// store's write and merge) calls ``checkHealthy()`` before doing so, so a failure surfaces as a
/// typed error, never as a wrong answer. Package API; any thread the reader allows.
package protocol FallibleRecordReader: RecordReader {
    /// Throws the reader's first failure, if any; returns otherwise.
    func checkHealthy() throws
}
