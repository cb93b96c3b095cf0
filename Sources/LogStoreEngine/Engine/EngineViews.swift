/// One state of the store a reader or writer can start from: the index and the open segment
/// files it points into.
struct ViewState: Sendable {
    var index: IndexState
    var segments: [UInt32: SegmentFile]
}

/// The states the engine hands out, and the rules for when a commit becomes visible.
///
/// - ``head``: what the next write transaction starts from. It includes every appended commit,
///   synced or not.
/// - ``published``: what ``LogEngine/snapshot()`` returns. It includes only commits that are
///   durable under the store's ``Durability``, so a reader never sees a commit a power loss could
///   take back (in `.synchronous` mode).
/// - Between them, in `.synchronous` mode: the heads of appended commits that wait for their
///   `fdatasync`, in sequence order.
///
/// Its only mutators are ``append(_:visibleNow:)`` (a commit was appended),
/// ``publish(upTo:)`` (a sync made commits durable), ``install(segment:)`` (a roll-over added a
/// segment), ``install(compacted:)`` (a compaction re-pointed the head) and
/// ``install(secondaryIndexes:ofType:)`` (indexes declared on a fully published head), plus
/// ``dropPending()`` when the store is poisoned. Invariants: `published.index.sequence <=
/// head.index.sequence`; pending sequences ascend and lie in (published, head].
///
/// Observation (Docs/Observation.md): while the engine has a publication observer, each
/// append brings the commit's ``CommitChanges``; ``takeVisibleChanges()`` hands out those that
/// `published` now covers, whichever mutator moved it.
///
/// A value inside `LogEngine.EngineState`: guarded by the engine's state lock.
struct EngineViews: Sendable {
    private(set) var published: ViewState
    private(set) var head: ViewState
    private var pending: [(sequence: UInt64, view: ViewState)] = []
    /// Changes of appended commits not yet handed to the publication observer, in sequence order.
    private var unannounced: [CommitChanges] = []

    init(_ view: ViewState) {
        published = view
        head = view
    }

    /// A commit was appended and `newHead` includes it. With `visibleNow` (durability `.buffered`
    /// or `.none`) readers see it at once; otherwise it waits for ``publish(upTo:)``. `changes`
    /// (when observed) waits for ``takeVisibleChanges()``.
    mutating func append(_ newHead: ViewState, visibleNow: Bool, changes: CommitChanges? = nil) {
        if let changes { unannounced.append(changes) }
        head = newHead
        if visibleNow {
            published = newHead
            pending.removeAll()
        } else {
            pending.append((newHead.index.sequence, newHead))
        }
        _checkInvariants()
    }

    /// Commits up to `sequence` are durable: publish the newest pending state they cover.
    /// Never moves `published` backwards (a later sync may have published more already).
    mutating func publish(upTo sequence: UInt64) {
        var last: ViewState? = nil
        while let first = pending.first, first.sequence <= sequence {
            last = first.view
            pending.removeFirst()
        }
        if let last, last.index.sequence > published.index.sequence { published = last }
        _checkInvariants()
    }

    /// A roll-over made `segment` the new tail: every state from now on may point into it (the
    /// published one holds nothing in it yet, but the states published after it will).
    mutating func install(segment: SegmentFile) {
        head.segments[segment.number] = segment
        for i in pending.indices { pending[i].view.segments[segment.number] = segment }
        published.segments[segment.number] = segment
    }

    /// A compaction switched generations: `newHead` is the head re-pointed at the compacted
    /// segments, at the same sequence. States equal to the old head switch with it; older
    /// published or pending states keep the old segments (and their files) until replaced.
    mutating func install(compacted newHead: ViewState) {
        let sequence = head.index.sequence
        assert(newHead.index.sequence == sequence, "a compaction must install a head at the same sequence")
        // Compaction moves records, never changes a value: the secondary indexes of the head at
        // this sequence are those of the re-pointed head too (the compactor's copy of them may
        // predate an index declared while it ran).
        var newHead = newHead
        newHead.index.secondary = head.index.secondary
        if published.index.sequence == sequence { published = newHead }
        for i in pending.indices where pending[i].sequence == sequence { pending[i].view = newHead }
        head = newHead
    }

    /// A checkpoint wrote the head's indexes as runs: `newHead` is the head with the same content
    /// (and sequence), its indexes read from the runs and trees holding only what was appended
    /// since. States equal to the head switch to it; older ones keep their trees until replaced.
    mutating func install(checkpointed newHead: ViewState) {
        let sequence = head.index.sequence
        assert(newHead.index.sequence == sequence, "a checkpoint must install a head at the same sequence")
        if published.index.sequence == sequence { published = newHead }
        for i in pending.indices where pending[i].sequence == sequence { pending[i].view = newHead }
        head = newHead
    }

    /// Indexes were declared for `type`: `indexes` replace its secondary indexes in the head and
    /// the published state, which must be the same state (the caller flushed under the writer
    /// lock, so nothing is pending).
    mutating func install(secondaryIndexes indexes: [String: SecondaryIndex], ofType type: String) {
        assert(isFullyPublished, "indexes are installed on a published head")
        head.index.secondary[type] = indexes.isEmpty ? nil : indexes
        published.index.secondary[type] = indexes.isEmpty ? nil : indexes
    }

    /// Whether readers see the head: nothing waits for a sync.
    var isFullyPublished: Bool { pending.isEmpty && published.index.sequence == head.index.sequence }

    /// The store was poisoned: commits waiting for a sync will never be published.
    mutating func dropPending() {
        pending.removeAll()
        unannounced.removeAll()
    }

    /// The changes of every commit readers can see now and the observer has not been told of,
    /// oldest first; they are not handed out again. O(1) when there are none.
    mutating func takeVisibleChanges() -> [CommitChanges] {
        guard let first = unannounced.first, first.sequence <= published.index.sequence else { return [] }
        let visible = published.index.sequence
        let n = unannounced.firstIndex { $0.sequence > visible } ?? unannounced.count
        defer { unannounced.removeFirst(n) }
        return Array(unannounced.prefix(n))
    }

    func _checkInvariants() {
        #if LOGSTORE_CHECK_INVARIANTS
            precondition(published.index.sequence <= head.index.sequence, "published state is ahead of the head")
            var previous = published.index.sequence
            for p in pending {
                precondition(p.sequence > previous && p.sequence <= head.index.sequence, "pending states out of order")
                previous = p.sequence
            }
        #endif
    }
}
