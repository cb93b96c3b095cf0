import LogStoreEngine
import Logging
import Synchronization

/// Declares each item type's ``DataStoreItem/indexes`` with the store's engine the first time the
/// store sees the type (or at ``LogDataStore/prepareIndexes(for:)``), once per opening of the
/// store (each ``EngineBackend`` has one).
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

    /// Makes sure `Item`'s indexes are declared with `engine`. Returns true when this call built
    /// or dropped something (a reader may then take a fresh snapshot of the same state to use them).
    ///
    /// A declaration that differs from the last one the store's history recorded is recorded
    /// there (``StoreHistory/recordIndexes(ofType:definitions:built:in:)``): in `transaction`
    /// when the caller is inside a write body (it commits with the body), otherwise in a write of
    /// its own (best effort: a store that cannot write now records it at a later declaration).
    ///
    /// Throws the declaration's errors: `.invalidArgument` for an index whose key path cannot be
    /// placed, `.uniqueConstraintViolation` when stored items break a unique index.
    @discardableResult
    func ensure<Item: DataStoreItem>(_ type: Item.Type, engine: LogEngine, transaction: EngineTransaction? = nil) throws -> Bool {
        let name = Item.itemType
        if declared.withLock({ $0.contains(name) }) { return false }
        let definitions = try Item.indexes.map { try $0.definition() }
        let report = try engine.declareIndexes(definitions, ofType: name)
        declared.withLock { _ = $0.insert(name) }
        try recordHistory(type: name, definitions: definitions, built: report.built, engine: engine, transaction: transaction)
        return !report.isUnchanged
    }

    /// Records a changed index declaration in the store's history (see ``ensure(_:engine:transaction:)``).
    func recordHistory(
        type: String, definitions: [IndexDefinition], built: [String: Int], engine: LogEngine,
        transaction: EngineTransaction?
    ) throws {
        if let transaction {
            try StoreHistory.recordIndexes(ofType: type, definitions: definitions, built: built, in: ReadWriteAccessor(txn: transaction))
            return
        }
        // Inside a write body of this engine without its transaction (a read nested in a write):
        // a write of its own would wait for itself. The next declaration records it.
        guard !engine.isWritingOnCurrentThread, engine.options.recovery == .strict else { return }
        do {
            try engine.write { txn in
                try StoreHistory.recordIndexes(ofType: type, definitions: definitions, built: built, in: ReadWriteAccessor(txn: txn))
            }
        } catch {
            engine.options.logger?.warning(
                "could not record an index declaration in the store's history; it is recorded at a later declaration",
                metadata: ["type": "\(type)", "error": "\(error)"])
        }
    }

    /// Forgets what was declared (after tearDown: a new setup opens a new engine).
}
