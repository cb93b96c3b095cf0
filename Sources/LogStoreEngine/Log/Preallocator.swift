import Dispatch
import Synchronization

/// Keeps the tail segment's blocks written and synced ahead of the append offset, so that a
/// durable commit overwrites allocated blocks instead of growing the file.
///
/// Why: `fdatasync` of a file that grew must also make the new size durable (an inode write, or
/// a journal commit), which costs a second I/O per commit; an overwrite inside the file's
/// durable size flushes data only. `fallocate` alone does not help on ext4: it leaves unwritten
/// extents, whose first write again needs a metadata commit. So this writes zeros, as LevelDB's
/// and RocksDB's recycled logs and SQLite's reused WAL give their commits written blocks.
///
/// What it does (Docs/Design.md, "Preallocation"; Docs/FileFormat.md §10 rule 5a):
/// - After each append it checks how far the tail's written (zeros or data) end lies ahead of the
///   append offset; below half of ``ahead`` it writes zeros up to `append offset + ahead` (never
///   past the segment size) and `fdatasync`s them. With `background`, on its own serial queue;
///   otherwise at once on the appender's thread (deterministic, for the crash harness).
/// - Once the tail is written up to the segment size it zero-fills and syncs a **spare** file
///   (`segment.spare.tmp`), which the next roll-over turns into the new segment, so that a new
///   segment's first commits overwrite too.
/// - Appends below the written end need no coordination (zeros are only ever written past it);
///   an append that extends the file takes the lock zero writes hold, so a zero write never lands
///   on top of data.
/// - Sealing and closing cut the tail back to its append offset (a sealed segment's size is
///   exact), under the same lock; an epoch tells a sync in flight that its segment was cut.
///
/// Recovery reads the zeros after the last transaction of the tail as free space, not damage.
///
/// A failed `fdatasync` of the tail here poisons the store (`onSyncFailure`): Linux reports a
/// writeback error to one `fsync` only, and this sync may have swallowed one that hit a commit's
/// bytes. A failed zero write (a full disk) only stops preallocation until the next roll-over.
///
/// `Sendable`: all state behind `state` (a mutex), the written end also in an atomic for the
/// appender's unlocked check.
package final class Preallocator: Sendable {
    /// The name of the spare file: a temporary file (removed on open, FileFormat.md §1).
    package static let spareName = "segment.spare.tmp"

    struct State {
        /// The tail being preallocated (nil after sealing it, before the next `start`).
        var tail: SegmentFile?
        /// Where the last append to the tail ended.
        var appendEnd: UInt64 = 0
        /// Bumped by every cut of the tail, so that work started before it does not act on it.
        var epoch: UInt64 = 0
        /// A job is queued or running.
        var running = false
        /// Zero writes failed (no space): none until the next `start`.
        var stopped = false
        var closed = false
        /// A zero-filled, synced file ready to become the next segment, and its size.
        var spare: (file: any FileSystemFile, size: UInt64)?
    }

    let directory: String
    let fileSystem: any FileSystem
    /// Bytes kept written ahead of the append offset (at most a segment), and the spare's size.
    let ahead: UInt64
    /// The segment size: the tail is never preallocated past it.
    let limit: UInt64
    let background: Bool
    let onSyncFailure: @Sendable (any Error, String) -> Void
    private let state = Mutex(State())
    /// The tail's written end (file size as written by anyone): read without the lock by appends.
    private let writtenEnd = Atomic<UInt64>(0)
    /// Jobs queued or running, for ``close()`` to wait on.
    private let jobs = DispatchGroup()
    private let queue = DispatchQueue(label: "LogStore.preallocation", qos: .userInitiated)
    private static let piece = 256 << 10
    private let zeros = [UInt8](repeating: 0, count: Preallocator.piece)

    init(
        directory: String, fileSystem: any FileSystem, ahead: Int, segmentSize: Int, background: Bool,
        onSyncFailure: @escaping @Sendable (any Error, String) -> Void
    ) {
        self.directory = directory
        self.fileSystem = fileSystem
        self.ahead = UInt64(max(min(ahead, segmentSize), 4096))
        self.limit = UInt64(segmentSize)
        self.background = background
        self.onSyncFailure = onSyncFailure
    }

    /// Makes `tail` the segment to preallocate, whose transactions end at `appendEnd` and whose
    /// file is `fileSize` bytes (zeros after `appendEnd`, durable). Writes nothing: the first
    /// append after it does (``appended(to:through:)``), so a store opened only to be read writes
    /// no zeros (and its close cuts none).
    func start(tail: SegmentFile, appendEnd: UInt64, fileSize: UInt64) {
        state.withLock { s in
            s.tail = tail
            s.appendEnd = appendEnd
            s.epoch &+= 1
            s.stopped = false
            writtenEnd.store(max(fileSize, appendEnd), ordering: .releasing)
        }
    }

    /// Writes `bytes` at `offset` of the tail (an append). Below the written end it just writes;
    /// past it, it writes under the lock and moves the written end, so no zero write lands on it.
    func write(_ bytes: [UInt8], to tail: SegmentFile, at offset: UInt64) throws {
        if offset + UInt64(bytes.count) <= writtenEnd.load(ordering: .acquiring) {
            try tail.file.write(bytes, at: offset)
            return
        }
        try state.withLock { s in
            try tail.file.write(bytes, at: offset)
            if s.tail === tail {
                let end = offset + UInt64(bytes.count)
                if end > writtenEnd.load(ordering: .relaxed) { writtenEnd.store(end, ordering: .releasing) }
            }
        }
    }

    /// An append to `tail` ended at `end`: write more zeros ahead if they run short.
    func appended(to tail: SegmentFile, through end: UInt64) {
        let go = state.withLock { s -> Bool in
            guard s.tail === tail else { return false }
            s.appendEnd = end
            return claimLocked(&s)
        }
        if go { run() }
    }

    /// Cuts `tail` back to `offset` (its valid end), dropping the zeros after it: before it is
    /// sealed, at close, or after a failed append. Stops preallocating it until ``start``.
    func cut(_ tail: SegmentFile, to offset: UInt64) throws {
        try state.withLock { s in
            s.epoch &+= 1
            if s.tail === tail { s.tail = nil }
            if try tail.file.size() > offset { try tail.file.truncate(to: offset) }
            writtenEnd.store(offset, ordering: .releasing)
        }
    }

    /// The spare file, if one is ready: zero-filled and synced, `size` bytes. The caller owns it.
    func takeSpare() -> (file: any FileSystemFile, size: UInt64)? {
        state.withLock { s in
            defer { s.spare = nil }
            return s.spare
        }
    }

    /// Stops all work, waits for a job in flight, and removes the spare. Idempotent.
    func close() {
        state.withLock { $0.closed = true }
        jobs.wait()
        if let spare = takeSpare() {
            try? spare.file.close()
            try? fileSystem.removeFile(atPath: _joinPath(directory, Self.spareName))
        }
    }

    // MARK: The job

    /// What the job should do next (under the lock).
    private enum Work {
        case extend(SegmentFile, from: UInt64, to: UInt64, epoch: UInt64)
        case spare
        case none
    }

    private func nextWorkLocked(_ s: State) -> Work {
        guard !s.closed, !s.stopped, let tail = s.tail else { return .none }
        let written = writtenEnd.load(ordering: .relaxed)
        let target = min(limit, s.appendEnd + ahead)
        if written < target && written - min(written, s.appendEnd) < ahead / 2 {
            return .extend(tail, from: written, to: target, epoch: s.epoch)
        }
        if written >= limit && s.spare == nil { return .spare }
        return .none
    }

    /// Marks a job as running if there is work and none runs. Under the lock.
    private func claimLocked(_ s: inout State) -> Bool {
        if s.running { return false }
        if case .none = nextWorkLocked(s) { return false }
        s.running = true
        return true
    }

    private func run() {
        if background {
            jobs.enter()
            queue.async {
                self.work()
                self.jobs.leave()
            }
        } else {
            work()
        }
    }

    private func work() {
        while true {
            let next = state.withLock { s -> Work in
                let w = nextWorkLocked(s)
                if case .none = w { s.running = false }
                return w
            }
            switch next {
            case .none:
                return
            case .extend(let tail, let from, let to, let epoch):
                if !extend(tail, from: from, to: to, epoch: epoch) { return }
            case .spare:
                if !makeSpare() { return }
            }
        }
    }

    /// Writes zeros over `from..<to` of `tail` (piece by piece, each under the lock, moving the
    /// written end) and syncs them. False if preallocation stopped.
    private func extend(_ tail: SegmentFile, from: UInt64, to: UInt64, epoch: UInt64) -> Bool {
        var at = from
        while at < to {
            let n = Int(min(UInt64(Self.piece), to - at))
            let ok = state.withLock { s -> Bool in
                guard s.epoch == epoch, !s.closed, writtenEnd.load(ordering: .relaxed) == at else { return true }
                do {
                    try zeros.withUnsafeBytes { try tail.file.write(UnsafeRawBufferPointer(rebasing: $0[0..<n]), at: at) }
                    writtenEnd.store(at + UInt64(n), ordering: .releasing)
                    return true
                } catch {
                    stopLocked(&s)
                    return false
                }
            }
            if !ok { return false }
            at += UInt64(n)
        }
        do {
            try tail.file.sync()
        } catch {
            let cut = state.withLock { s -> Bool in
                defer { stopLocked(&s) }
                return s.epoch != epoch
            }
            // A sync of a file that was since cut and sealed has nothing to lose; any other
            // failure may have hidden a commit's writeback error.
            if !cut { onSyncFailure(error, tail.path) }
            return false
        }
        return true
    }

    /// Creates the spare file: `ahead` bytes of zeros, synced. False if preallocation stopped.
    private func makeSpare() -> Bool {
        let path = _joinPath(directory, Self.spareName)
        do {
            let file = try fileSystem.open(path, mode: .createOrTruncate)
            var at: UInt64 = 0
            while at < ahead {
                let n = Int(min(UInt64(Self.piece), ahead - at))
                try zeros.withUnsafeBytes { try file.write(UnsafeRawBufferPointer(rebasing: $0[0..<n]), at: at) }
                at += UInt64(n)
            }
            try file.sync()
            let kept = state.withLock { s -> Bool in
                guard !s.closed else { return false }
                s.spare = (file, ahead)
                return true
            }
            if !kept {
                try? file.close()
                try? fileSystem.removeFile(atPath: path)
            }
            return kept
        } catch {
            try? fileSystem.removeFile(atPath: path)
            state.withLock { stopLocked(&$0) }
            return false
        }
    }

    private func stopLocked(_ s: inout State) {
        s.stopped = true
        s.running = false
    }
}
