public import LogStoreEngine

/// The workload of `logstore-crashtest group-commit` and the group-commit power-loss test: many writer threads committing at
/// once on one engine, so commits share `fdatasync`s (group commit) and several transactions are
/// appended but unsynced at every moment.
///
/// Writer `w` commits its items `w-0`, `w-1`, ... one transaction at a time (an item is a put of
/// key `w-c` whose value is a pure function of `(w, c)`), each transaction also deleting the item
/// `w-(c-4)` every fifth time, so that a recovery that resurrects a delete is caught. A writer's
/// next commit starts only after its previous one returned (was durable), so each writer's items
/// are a prefix of its sequence with the deleted ones missing.
public enum GroupCommitWorkload {
    /// The store's options: synchronous durability, small segments (roll-overs under load), small
    /// frames (multi-frame transactions), background compaction, checkpoints and preallocation
    /// (16 KiB ahead of the tail, racing the writers) on.
    public static func options() -> LogEngineOptions {
        var o = LogEngineOptions()
        o.durability = .synchronous
        o.segmentSize = 64 << 10
        o.maxFramePayload = 512
        o.checkpointInterval = 128 << 10
        o.compactionMinimumDeadBytes = 32 << 10
        o.compactionThreshold = 0.2
        o.preallocationSize = 16 << 10
        return o
    }

    /// The item type every writer writes.
    public static let type = "Item"

    /// The key of writer `writer`'s item `n`.
    public static func key(_ writer: Int, _ n: Int) -> RecordKey { RecordKey(Array("\(writer)-\(n)".utf8)) }

    /// The value of item `(writer, n)`: 16 to 1,500 bytes, a function of the pair.
    public static func value(_ writer: Int, _ n: Int) -> [UInt8] {
        var g = SplitMix64(seed: UInt64(writer) << 32 | UInt64(n))
        return (0..<g.int(in: 16...1_500)).map { _ in UInt8(truncatingIfNeeded: g.next()) }
    }

    /// Whether commit `n` of a writer deletes item `n - 4`.
    public static func deletes(_ n: Int) -> Bool { n >= 4 && n % 5 == 0 }

    /// The items a writer's first `count` commits leave.
    public static func expected(_ writer: Int, commits count: Int) -> Set<Int> {
        var s = Set(0..<count)
        for n in 0..<count where deletes(n) { s.remove(n - 4) }
        return s
    }
}

extension GroupCommitWorkload {
    /// The commit of writer `writer`'s item `n` (and the delete that goes with it).
    public static func operations(_ writer: Int, _ n: Int) -> [RecordOperation] {
        var ops: [RecordOperation] = [.put(type: type, key: key(writer, n), value: value(writer, n))]
        if deletes(n) { ops.append(.delete(type: type, key: key(writer, n - 4))) }
        return ops
    }

    /// Writer and item number of `key`, if it is one of this workload's.
    public static func parse(_ key: RecordKey) -> (writer: Int, n: Int)? {
        let parts = String(decoding: key.bytes, as: UTF8.self).split(separator: "-")
        guard parts.count == 2, let w = Int(parts[0]), let n = Int(parts[1]) else { return nil }
        return (w, n)
    }
}

/// A broken promise ``GroupCommitWorkload/check(_:writers:acknowledged:durable:)`` found.
public struct GroupCommitViolation: Error, CustomStringConvertible {
    /// What is wrong.
    public var description: String
    /// A violation saying `description`.
    public init(_ description: String) { self.description = description }
}

extension GroupCommitWorkload {
    /// Checks a store recovered after a crash: for every writer, its items must be exactly those
    /// of its first `n` commits (deletes applied), every value the one committed, where `n` covers
    /// every commit it acknowledged (`acknowledged[w]`: the highest item number, -1 for none) and
    /// every commit an earlier check found (`durable[w]`), and at most one more (the commit in
    /// flight). Returns each writer's `n`. Throws ``GroupCommitViolation``, or the store's errors.
    public static func check(_ snapshot: EngineSnapshot, writers: Int, acknowledged: [Int], durable: [Int]) throws -> [Int] {
        var items = [Set<Int>](repeating: [], count: writers)
        for (k, _) in try snapshot.locations(ofType: type) {
            guard let (w, n) = parse(k), w < writers else { throw GroupCommitViolation("unexpected key \(k)") }
            items[w].insert(n)
            guard let v = try snapshot.value(type: type, key: k), Array(v) == value(w, n) else {
                throw GroupCommitViolation("item \(w)-\(n) has a value that was never committed")
            }
        }
        var made = [Int](repeating: 0, count: writers)
        for w in 0..<writers {
            made[w] = (items[w].max() ?? -1) + 1
            let lower = max(durable[w], acknowledged[w] + 1)
            guard made[w] >= lower, made[w] <= lower + 1 else {
                throw GroupCommitViolation(
                    "writer \(w): the store holds its commits 0..<\(made[w]), but \(lower) were acknowledged (or found before) and at most one more can be in flight"
                )
            }
            guard items[w] == expected(w, commits: made[w]) else {
                throw GroupCommitViolation(
                    "writer \(w): its items are not those of its first \(made[w]) commits (a hole, a lost commit or a resurrected delete)")
            }
        }
        return made
    }
}
