import LogStoreEngine
import Synchronization

/// Declares each item type's ``DataStoreItem/indexes`` with the store's engine the first time the
/// store sees the type (or at ``LogDataStore/prepareIndexes(for:)``), once per store instance.
///
/// Declaring builds what is missing from the records (``LogEngine/declareIndexes(_:ofType:)``),
/// so the first request for a type may take as long as reading its items once; indexes loaded
/// from a checkpoint cost nothing. Inside a write body of the store's own engine the declaration
/// runs under the writer lock the body holds, so the body's commit is indexed (and checked
/// against unique indexes) too. Child stores do not declare inside their write bodies (their
/// merges are indexed by the parent's commit). Thread-safe.
final class IndexRegistry: Sendable {
    let declared = Mutex<Set<String>>([])

    init() {}

    /// Makes sure `Item`'s indexes are declared with `engine` (the store's, or a child's root
    /// engine). Returns true when this call built or dropped
    /// something (a reader may then take a fresh snapshot of the same state to use them).
    /// Throws the declaration's errors: `.invalidArgument` for an index whose key path cannot be
    /// placed, `.uniqueConstraintViolation` when stored items break a unique index.
    @discardableResult
    func ensure<Item: DataStoreItem>(_ type: Item.Type, engine: () throws -> LogEngine) throws -> Bool {
        let name = Item.itemType
        if declared.withLock({ $0.contains(name) }) { return false }
        let engine = try engine()
        let report = try engine.declareIndexes(try Item.indexes.map { try $0.definition() }, ofType: name)
        declared.withLock { _ = $0.insert(name) }
        return !report.isUnchanged
    }

    /// Forgets what was declared (after tearDown: a new setup opens a new engine).
    func reset() { declared.withLock { $0.removeAll() } }
}
