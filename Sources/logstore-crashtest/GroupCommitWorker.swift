import ArgumentParser
import Foundation
import LogStoreEngine
import _LogStoreTestSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The workload of `logstore-crashtest group-commit` (issue 12): many writer threads committing at
/// once on one engine, so commits share `fdatasync`s (group commit) and several transactions are
/// appended but unsynced at every moment.
///
/// Writer `w` commits its items `w-0`, `w-1`, ... one transaction at a time (an item is a put of
/// key `w-c` whose value is a pure function of `(w, c)`), each transaction also deleting the item
/// `w-(c-4)` every fifth time, so that a recovery that resurrects a delete is caught. A writer's
/// next commit starts only after its previous one returned (was durable), so each writer's items
/// are a prefix of its sequence with the deleted ones missing.
enum GroupCommitWorkload {
    /// The store's options: synchronous durability, small segments (roll-overs under load), small
    /// frames (multi-frame transactions), background compaction and checkpoints on.
    static func options() -> LogStoreOptions {
        var o = LogStoreOptions()
        o.durability = .synchronous
        o.segmentSize = 64 << 10
        o.maxFramePayload = 512
        o.checkpointInterval = 128 << 10
        o.compactionMinimumDeadBytes = 32 << 10
        o.compactionThreshold = 0.2
        return o
    }

    static let type = "Item"

    static func key(_ writer: Int, _ n: Int) -> RecordKey { RecordKey(Array("\(writer)-\(n)".utf8)) }

    /// The value of item `(writer, n)`: 16 to 1,500 bytes, a function of the pair.
    static func value(_ writer: Int, _ n: Int) -> [UInt8] {
        var g = SplitMix64(seed: UInt64(writer) << 32 | UInt64(n))
        return (0..<g.int(in: 16...1_500)).map { _ in UInt8(truncatingIfNeeded: g.next()) }
    }

    /// Whether commit `n` of a writer deletes item `n - 4`.
    static func deletes(_ n: Int) -> Bool { n >= 4 && n % 5 == 0 }

    /// The items a writer's first `count` commits leave.
    static func expected(_ writer: Int, commits count: Int) -> Set<Int> {
        var s = Set(0..<count)
        for n in 0..<count where deletes(n) { s.remove(n - 4) }
        return s
    }
}

/// `logstore-crashtest group-commit-worker`: opens the store, reports how far each writer got, and
/// runs the writers until killed. Protocol: `ready`, then `ack <writer> <n>` after each commit
/// returned (one `write(2)` per line).
struct GroupCommitWorker: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "group-commit-worker",
        abstract: "Run one group-commit crash-test worker (started by the driver; not for direct use).")

    @Option(help: "The store directory.")
    var dir: String

    @Option(help: "Writer threads.")
    var writers: Int = 16

    @Option(help: "Sleep up to this many microseconds after each mutating I/O operation (a slow disk; 0: none).")
    var ioDelayUs: UInt32 = 0

    func run() throws {
        let fs: any FileSystem = ioDelayUs > 0 ? DelayingFileSystem(POSIXFileSystem(), maxDelayMicroseconds: ioDelayUs) : POSIXFileSystem()
        let engine: LogEngine
        do {
            engine = try LogEngine.open(directory: dir, fileSystem: fs, options: GroupCommitWorkload.options())
        } catch {
            emit("error open: \(error)")
            Foundation.exit(3)
        }
        // Where each writer resumes: one past its highest item (deleted items are below it).
        var next = [Int](repeating: 0, count: writers)
        do {
            for (k, _) in try engine.snapshot().locations(ofType: GroupCommitWorkload.type) {
                let parts = String(decoding: k.bytes, as: UTF8.self).split(separator: "-")
                if parts.count == 2, let w = Int(parts[0]), let n = Int(parts[1]), w < writers { next[w] = max(next[w], n + 1) }
            }
        } catch {
            emit("error read: \(error)")
            Foundation.exit(3)
        }
        emit("ready")
        let start = next
        DispatchQueue.concurrentPerform(iterations: writers) { w in
            var n = start[w]
            while true {
                var ops: [RecordOperation] = [.put(type: GroupCommitWorkload.type, key: GroupCommitWorkload.key(w, n), value: GroupCommitWorkload.value(w, n))]
                if GroupCommitWorkload.deletes(n) { ops.append(.delete(type: GroupCommitWorkload.type, key: GroupCommitWorkload.key(w, n - 4))) }
                do {
                    try engine.commit(ops)
                } catch {
                    emit("error commit \(w) \(n): \(error)")
                    Foundation.exit(3)
                }
                emit("ack \(w) \(n)")
                n += 1
            }
        }
    }
}
