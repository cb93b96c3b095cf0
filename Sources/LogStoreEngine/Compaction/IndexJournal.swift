/// The index changes appended while a compaction copies (`EngineState.compactionJournal`) or a
/// checkpoint writes its runs (`EngineState.checkpointJournal`), in order. Replaying them onto
/// the copied state gives the head state.
struct IndexJournal: Sendable {
    enum Change: Sendable {
        case put(String, RecordKey, RecordLocation)
        case delete(String, RecordKey)
        case deleteAll(String)
        /// A commit's secondary-index changes (checkpoint journals replay them; compaction,
        /// which keeps the head's secondary indexes, skips them).
        case secondary(SecondaryChanges)
    }
    /// The default `limit`.
    static let defaultLimit = 1 << 22
    /// Beyond this many changes the journal gives up (memory) and the switch re-points the head.
    let limit: Int
    private(set) var changes: [Change] = []
    private(set) var overflowed = false

    init(limit: Int = defaultLimit) { self.limit = limit }

    mutating func record(_ c: [Change]) {
        if overflowed { return }
        if changes.count + c.count > limit {
            overflowed = true
            changes = []
            return
        }
        changes.append(contentsOf: c)
    }

    /// Replays the changes onto `index`, the secondary-index changes too with `secondary`.
    /// Throws `.corruption` for a damaged index run. What the changes replace is counted in `dead`.
    func apply(to index: inout IndexState, secondary: Bool = false, dead: inout DeadBytes) throws {
        for c in changes {
            switch c {
            case .put(let t, let k, let loc): try index.put(t, k, loc, dead: &dead)
            case .delete(let t, let k): try index.delete(t, k, dead: &dead)
            case .secondary(let changes): if secondary { try index.apply(changes) }
            case .deleteAll(let t): index.deleteAll(t, dead: &dead)
            }
        }
    }
}
