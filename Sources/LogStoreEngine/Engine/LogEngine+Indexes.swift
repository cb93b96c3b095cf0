import Logging

/// What ``LogEngine/declareIndexes(_:ofType:)`` did.
public struct IndexDeclarationReport: Sendable, Equatable {
    /// Indexes built now (new, or their definition changed), with their entry counts.
    public var built: [String: Int] = [:]
    /// Indexes dropped (no longer declared).
    public var dropped: [String] = []
    /// Indexes kept as they were (same definition).
    public var unchanged: [String] = []

    /// Whether nothing changed.
    public var isUnchanged: Bool { built.isEmpty && dropped.isEmpty }
}

extension LogEngine {
    /// The secondary-index changes `operations` make on top of `head` (read through the frame
    /// cache). Caller holds the writer lock. Throws `.uniqueConstraintViolation`, `.corruption`.
    func secondaryChanges(for operations: [RecordOperation], on head: ViewState) throws -> SecondaryChanges {
        guard head.index.hasSecondaryIndexes else { return SecondaryChanges() }
        let reader = EngineSnapshot(index: head.index, segments: head.segments, cache: cache)
        return try head.index.secondaryChanges(for: operations, readOld: { try reader.read($0) })
    }

    /// Makes `definitions` the secondary indexes of `type`, building what is new or changed from
    /// the records (with a log line each) and dropping what is no longer declared; definitions
    /// already in place (the same ``IndexDefinition/definitionHash``, loaded from a checkpoint or
    /// declared earlier in this process) cost nothing.
    ///
    /// Runs on the calling thread. When something must be built it takes the writer lock (writes
    /// wait), makes every commit so far durable so that readers see the state the index is built
    /// from, reads every record of `type` once, and installs the indexes for every later snapshot
    /// and write. Called from inside a write body, it builds from the state that body started
    /// from and installs the indexes before the body's commit, which then maintains them (the
    /// body's own reads do not use them). Indexes are derived data: nothing is written to the log; the next checkpoint
    /// stores them, and until then recovery rebuilds them when they are declared again.
    ///
    /// Throws `.invalidArgument` for an invalid definition or two with one name,
    /// `.uniqueConstraintViolation` if a unique index is declared over records that break it (no
    /// index of the type changes then), `.notOpen`,
    /// `.storePoisoned`, and I/O and `.corruption` errors from reading records.
    @discardableResult
    public func declareIndexes(_ definitions: [IndexDefinition], ofType type: String) throws -> IndexDeclarationReport {
        var byName: [String: IndexDefinition] = [:]
        for d in definitions {
            let valid = try d.validated(forType: type)
            guard byName.updateValue(valid, forKey: valid.name) == nil else {
                throw LogStoreError(.invalidArgument, "\(type) declares two indexes named \"\(valid.name)\"; give each a unique name.")
            }
        }
        func same(_ current: [String: SecondaryIndex]) -> Bool {
            current.count == byName.count && current.allSatisfy { byName[$0.key]?.definitionHash == $0.value.definition.definitionHash }
        }
        // Already in place: no lock.
        let published = try state.withLock { s -> [String: SecondaryIndex] in
            try Self.checkWritable(s)
            return s.views.published.index.secondaryIndexes(ofType: type)
        }
        if same(published) { return IndexDeclarationReport(unchanged: byName.keys.sorted()) }

        // Inside a write body on this thread the writer lock is already held: no other commit
        // can come between the build and the install, and the body's commit maintains (and
        // checks) the new indexes, since it indexes on top of the head installed here.
        let insideWrite = writer.heldByCurrentThread
        if !insideWrite { try writer.acquire() }
        defer { if !insideWrite { writer.release() } }
        try checkWritable()
        // Readers must see the state the indexes are built from.
        try syncThrough(group.lastAppended)
        let head = try state.withLock { s -> ViewState in
            try Self.checkWritable(s)
            guard s.views.isFullyPublished else {
                throw LogStoreError(.storePoisoned, "Commits are waiting for a sync that did not publish them; reopen the store.")
            }
            return s.views.head
        }
        let current = head.index.secondaryIndexes(ofType: type)
        var report = IndexDeclarationReport()
        if same(current) {
            report.unchanged = byName.keys.sorted()
            return report
        }
        let reader = EngineSnapshot(index: head.index, segments: head.segments, cache: cache)
        var next: [String: SecondaryIndex] = [:]
        for (name, d) in byName.sorted(by: { $0.key < $1.key }) {
            if let existing = current[name], existing.definition.definitionHash == d.definitionHash {
                next[name] = existing
                report.unchanged.append(name)
                continue
            }
            let built = try head.index.buildSecondaryIndex(d, ofType: type, read: { try reader.read($0) })
            next[name] = built
            report.built[name] = built.entries.count
            logger?.notice(
                "built secondary index",
                metadata: [
                    "store": "\(directory)", "type": "\(type)", "index": "\(d)", "entries": "\(built.entries.count)",
                    "reason": "\(current[name] == nil ? "new" : "definition changed")",
                ])
        }
        report.dropped = current.keys.filter { byName[$0] == nil }.sorted()
        for name in report.dropped {
            logger?.notice("dropped secondary index", metadata: ["store": "\(directory)", "type": "\(type)", "index": "\(name)"])
        }
        try state.withLock { s in
            guard s.views.isFullyPublished, s.views.head.index.sequence == head.index.sequence else {
                throw LogStoreError(
                    .storePoisoned, "The store changed while its indexes were built under the writer lock; reopen the store.")
            }
            s.views.install(secondaryIndexes: next, ofType: type)
        }
        return report
    }
}
