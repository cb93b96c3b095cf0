import Foundation
import LogStore
import LogStoreEngine
import LogStoreSQL
import Synchronization

/// The `changes` column of `logstore_commits`: what one commit changed, by item type, so that
/// every server can tell its observers (never LISTEN/NOTIFY: the distributed engines do not all
/// have it). Byte grammar (uvarints as in Docs/FileFormat.md):
///
///     changes := typeCount:uvarint type*
///     type    := nameLength:uvarint name:utf8
///                flags:u8                       bit 0: a delete-all came first (the others are 0)
///                [clearedCount:uvarint key*]    present when bit 0 is set: the keys it removed
///                writtenCount:uvarint key*      inserted or replaced, in commit order
///                deletedCount:uvarint key*      deleted one by one
///     key     := length:uvarint bytes           a record key
///
/// Pure; any thread.
enum PostgresCommitLog {
    static func encode(_ types: [String: CommitChanges.TypeChanges]) -> [UInt8] {
        var w = _ByteWriter(capacity: 64)
        w.uvarint(UInt64(types.count))
        for (name, t) in types.sorted(by: { $0.key < $1.key }) {
            w.lengthPrefixed(Array(name.utf8))
            if let cleared = t.cleared {
                w.u8(1)
                let keys = cleared.keys()
                w.uvarint(UInt64(keys.count))
                for k in keys { k.withUnsafeBytes { w.lengthPrefixed($0) } }
            } else {
                w.u8(0)
            }
            for list in [t.written, t.deleted] {
                w.uvarint(UInt64(list.count))
                for k in list { k.withUnsafeBytes { w.lengthPrefixed($0) } }
            }
        }
        return w.bytes
    }

    /// The changes of commit `sequence` from its column bytes. Throws `.corruption` naming the
    /// offset when the bytes are not of the grammar above.
    static func decode(_ bytes: UnsafeRawBufferPointer, sequence: UInt64) throws -> CommitChanges {
        var r = Reader(base: bytes)
        do {
            var types: [String: CommitChanges.TypeChanges] = [:]
            for _ in 0..<(try r.count()) {
                let nameBytes = try r.bytes(try r.count())
                guard let name = String(validating: nameBytes, as: UTF8.self) else {
                    throw Failure(reason: "an item type name is not UTF-8", offset: r.offset)
                }
                let flags = try r.u8()
                guard flags & ~1 == 0 else { throw Failure(reason: "unknown flags \(flags)", offset: r.offset - 1) }
                var t = CommitChanges.TypeChanges()
                if flags & 1 != 0 {
                    let keys = try r.keys()
                    t.cleared = CommitChanges.ClearedKeys(count: keys.count, keys: { keys })
                }
                t.written = try r.keys()
                t.deleted = try r.keys()
                types[name] = t
            }
            guard r.offset == bytes.count else {
                throw Failure(reason: "\(bytes.count - r.offset) bytes after the last type", offset: r.offset)
            }
            return CommitChanges(sequence: sequence, types: types)
        } catch let f as Failure {
            throw LogStoreError(
                .corruption,
                "The commit log entry of commit #\(sequence) is damaged: \(f.reason) (at byte \(f.offset) of \(bytes.count)). Observers re-read their results; delete the entry if it persists.",
                offset: UInt64(f.offset))
        }
    }

    struct Failure: Error {
        var reason: String
        var offset: Int
    }

    /// A bounds-checked reader of the grammar above.
    struct Reader {
        let base: UnsafeRawBufferPointer
        var offset = 0

        mutating func u8() throws -> UInt8 {
            guard offset < base.count else { throw Failure(reason: "truncated", offset: offset) }
            defer { offset += 1 }
            return base[offset]
        }

        /// A uvarint that counts something in the bytes left (so a damaged count cannot ask for
        /// more memory than the entry's size).
        mutating func count() throws -> Int {
            let start = offset
            var v: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let b = try u8()
                guard shift < 64 else { throw Failure(reason: "varint longer than 10 bytes", offset: start) }
                v |= UInt64(b & 0x7F) << shift
                if b & 0x80 == 0 { break }
                shift += 7
            }
            guard v <= UInt64(base.count - offset) else {
                throw Failure(reason: "count \(v) exceeds the \(base.count - offset) bytes left", offset: start)
            }
            return Int(v)
        }

        mutating func bytes(_ n: Int) throws -> UnsafeRawBufferPointer {
            guard n <= base.count - offset else { throw Failure(reason: "truncated", offset: offset) }
            defer { offset += n }
            return UnsafeRawBufferPointer(rebasing: base[offset..<offset + n])
        }

        mutating func keys() throws -> [RecordKey] {
            let n = try count()
            var out: [RecordKey] = []
            out.reserveCapacity(n)
            for _ in 0..<n { out.append(RecordKey(try bytes(try count()))) }
            return out
        }
    }
}

/// Hands the store's commits to its change feed in sequence order, exactly once each: this
/// process's commits from memory when they are next in line, the others' (and any this process
/// skipped while nobody observed) from the commit log, a reset when the log no longer has them.
///
/// The feed's rule "publish before readers can see" holds for what observation reads: its
/// snapshots come from ``PostgresDataStore``'s feed closure, which publishes every commit up to the
/// snapshot's sequence before handing the snapshot out. Thread-safe: publication runs under one
/// mutex (held across the log query, so commits reach the feed in order).
final class PostgresChangePublisher: Sendable {
    struct State {
        var published: UInt64
        var feed: DataStoreChangeFeed?
        /// Sees every publication, in order, after the feed (tests of the publication order).
        var tap: (@Sendable ([CommitChanges]) -> Void)?
    }
    let state: Mutex<State>

    init(sequence: UInt64) {
        state = Mutex(State(published: sequence))
    }

    func attach(_ feed: DataStoreChangeFeed) { state.withLock { $0.feed = feed } }

    /// The feed, if it has observers now, or a tap (else publication can wait for the next
    /// snapshot).
    var isObserved: Bool { state.withLock { $0.tap != nil || ($0.feed?._subscriberCount ?? 0) > 0 } }

    /// Installs `tap`, called with every later publication right after the feed gets it.
    func attach(tap: @escaping @Sendable ([CommitChanges]) -> Void) { state.withLock { $0.tap = tap } }

    var published: UInt64 { state.withLock { $0.published } }

    /// Publishes every commit up to `sequence` not published yet. `own` is this process's commit
    /// `sequence`, published from memory when it is the only one missing; otherwise `log(from,
    /// through)` reads the commit log (commits with `from < sequence <= through`, in order).
    /// Commits the log no longer has become one reset at `sequence`. Throws what `log` throws
    /// (nothing is published then).
    func publish(through sequence: UInt64, own: CommitChanges?, log: (UInt64, UInt64) throws -> [CommitChanges]) throws {
        try state.withLock { s in
            guard s.published < sequence else { return }
            var commits: [CommitChanges]
            if let own, own.sequence == sequence, s.published + 1 == sequence {
                commits = [own]
            } else {
                commits = try log(s.published, sequence)
                let complete =
                    commits.count == Int(sequence - s.published)
                    && zip(commits, (s.published + 1)...sequence).allSatisfy { $0.sequence == $1 }
                if !complete { commits = [CommitChanges(sequence: sequence, types: [:], isReset: true)] }
            }
            s.feed?.publish(commits)
            s.tap?(commits)
            s.published = sequence
        }
    }
}
