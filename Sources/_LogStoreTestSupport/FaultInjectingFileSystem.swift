public import LogStoreEngine
import Synchronization

/// An in-memory ``FileSystem`` that knows what has been made durable, can "crash" at a chosen
/// operation, and rebuilds the file system a crash could have left behind.
///
/// Fault model (Docs/Testing.md, "Fault model"):
/// - File data is durable once ``FileSystemFile/sync()`` returned for it. Writes and truncations
///   after the last sync are *unsynced*.
/// - A directory entry (a file or directory created, a rename, a removal) is durable once
///   ``syncDirectory(atPath:)`` of the directory holding it returned. Syncing a file does not
///   make its name durable, and syncing a directory does not make file data durable.
/// - At a crash point (``scheduleCrash(afterMutatingOperations:)`` or ``crash()``) the file
///   system stops: the operation that hits the crash point does not happen, and every later call
///   throws `LogStoreError(.io, "simulated crash ...")` (``itemKind(atPath:)`` returns nil).
/// - ``powerLossImage(seed:)`` builds a new file system as a power loss could leave the disk: per
///   file, the unsynced changes are all dropped, all kept, or a prefix of them is kept, possibly
///   with the next write torn at a random byte (the rest of it missing, zeros or garbage). Per
///   directory, unsynced entry changes are dropped or kept, each on its own, but a rename is
///   atomic (the file has the old name or the new one, never neither or both). Decisions for
///   different files and directories are independent, so unsynced writes to different files
///   may land in any order.
/// - ``processCrashImage()`` is a `kill -9`: everything written to the OS is kept, nothing torn,
///   but what was not durable stays not durable (the page cache survives the process), so a
///   later power loss can still lose it.
///
/// Thread-safe: all state lives behind one mutex; file contents are shared between every handle
/// open on the same file. Paths are absolute and `/`-separated. Directory listings are sorted so
/// that a seeded run is reproducible.
public final class FaultInjectingFileSystem: FileSystem {
    enum Entry: Equatable, Sendable {
        case file(Int)
        case directory
    }

    enum FileChange: Sendable {
        case write(offset: Int, bytes: [UInt8])
        case truncate(Int)
    }

    enum DirectoryChange: Sendable {
        case link(String, Entry)
        case unlink(String, Entry)
        case rename(from: String, to: String, Entry)
    }

    struct Inode: Sendable {
        /// What the OS shows (page cache).
        var data: [UInt8] = []
        /// What is on the platter as of the last sync.
        var durable: [UInt8] = []
        /// Changes since the last sync, in order.
        var unsynced: [FileChange] = []
    }

    struct State: Sendable {
        var inodes: [Int: Inode] = [:]
        var nextInode = 1
        /// The namespace as the OS shows it: full path -> entry. The root is always present.
        var entries: [String: Entry] = ["/": .directory]
        /// The namespace as of the last directory syncs.
        var durableEntries: [String: Entry] = ["/": .directory]
        /// Per directory: entry changes not yet made durable, in order.
        var unsyncedDirectoryChanges: [String: [DirectoryChange]] = [:]
        var locks: Set<String> = []
        var crashed = false
        var countdown: Int? = nil
        var mutations = 0

        mutating func beginMutation(_ path: String) throws {
            if crashed { throw FaultInjectingFileSystem.crashError(path) }
            if let c = countdown {
                if c == 0 {
                    crashed = true
                    countdown = nil
                    throw FaultInjectingFileSystem.crashError(path)
                }
                countdown = c - 1
            }
            mutations += 1
        }

        func checkAlive(_ path: String) throws {
            if crashed { throw FaultInjectingFileSystem.crashError(path) }
        }

        mutating func withInode<R>(_ id: Int, _ path: String, _ body: (inout Inode) throws -> R) throws -> R {
            guard inodes[id] != nil else { throw LogStoreError(.io, "Internal: file has no inode.", path: path) }
            return try body(&inodes[id, default: Inode()])
        }

        mutating func logDirectoryChange(_ dir: String, _ change: DirectoryChange) {
            unsyncedDirectoryChanges[dir, default: []].append(change)
        }
    }

    let state: Mutex<State>

    /// The faults applied when this instance was built by ``powerLossImage(seed:)`` (all zero
    /// for a file system made by ``init()`` or ``processCrashImage()``).
    public let faultsApplied: FaultCounts

    /// Creates an empty file system holding only the root directory `/` (durable).
    public init() {
        state = Mutex(State())
        faultsApplied = FaultCounts()
    }

    init(state: State, faults: FaultCounts) {
        self.state = Mutex(state)
        faultsApplied = faults
    }

    static func crashError(_ path: String) -> LogStoreError {
        LogStoreError(.io, "simulated crash (FaultInjectingFileSystem crashed; build a crash image to continue)", path: path)
    }

    /// Whether the error is the one this file system throws after its crash point, directly or
    /// as the underlying cause of another ``LogStoreError`` (such as `.storePoisoned`).
    public static func isSimulatedCrash(_ error: any Error) -> Bool {
        var current: (any Error)? = error
        while let e = current as? LogStoreError {
            if e.code == .io && e.message.hasPrefix("simulated crash") { return true }
            current = e.underlyingError
        }
        return false
    }

    static func normalize(_ p: String) -> String {
        var p = p
        while p.count > 1, p.hasSuffix("/") { p.removeLast() }
        return p
    }

    static func parent(_ p: String) -> String {
        guard let i = p.lastIndex(of: "/") else { return "/" }
        return i == p.startIndex ? "/" : String(p[..<i])
    }

    // MARK: Crash control

    /// Arms the crash point: the next `n` mutating operations (create, write, truncate, sync,
    /// rename, remove, directory sync, lock) succeed and the one after them crashes instead of
    /// running. `n == 0` crashes the next mutating operation. Replaces an earlier schedule.
    public func scheduleCrash(afterMutatingOperations n: Int) {
        state.withLock { $0.countdown = max(0, n) }
    }

    /// Disarms a crash point set by ``scheduleCrash(afterMutatingOperations:)`` that has not hit.
    public func cancelScheduledCrash() {
        state.withLock { $0.countdown = nil }
    }

    /// Crashes now: every later call throws. Idempotent.
    public func crash() {
        state.withLock { s in
            s.crashed = true
            s.countdown = nil
        }
    }

    /// Whether the file system has crashed.
    public var isCrashed: Bool { state.withLock { $0.crashed } }

    /// How many mutating operations have run (not counting the one that crashed).
    public var mutatingOperationCount: Int { state.withLock { $0.mutations } }

    /// Whether any file data or directory entry is not yet durable.
    public var hasUnsyncedChanges: Bool {
        state.withLock { s in
            s.inodes.values.contains { !$0.unsynced.isEmpty } || s.unsyncedDirectoryChanges.values.contains { !$0.isEmpty }
        }
    }

    // MARK: FileSystem

    /// See ``FileSystem/createDirectory(atPath:)``. Each new directory's entry is unsynced in its
    /// parent until the parent is synced. Counts as one mutating operation.
    public func createDirectory(atPath path: String) throws {
        var p = Self.normalize(path)
        try state.withLock { s in
            try s.beginMutation(p)
            var chain: [String] = []
            while p != "/" && s.entries[p] != .directory {
                if s.entries[p] != nil { throw LogStoreError(.io, "A file exists where a directory is wanted.", path: p) }
                chain.append(p)
                p = Self.parent(p)
            }
            for d in chain.reversed() {
                s.entries[d] = .directory
                s.logDirectoryChange(Self.parent(d), .link(d, .directory))
            }
        }
    }

    /// See ``FileSystem/contentsOfDirectory(atPath:)``. Names are sorted.
    public func contentsOfDirectory(atPath path: String) throws -> [String] {
        let p = Self.normalize(path)
        return try state.withLock { s in
            try s.checkAlive(p)
            guard s.entries[p] == .directory else { throw LogStoreError(.io, "No such directory.", path: p) }
            let prefix = p == "/" ? "/" : p + "/"
            var names: [String] = []
            for f in s.entries.keys where f != "/" && f.hasPrefix(prefix) && !f.dropFirst(prefix.count).contains("/") {
                names.append(String(f.dropFirst(prefix.count)))
            }
            return names.sorted()
        }
    }

    /// See ``FileSystem/itemKind(atPath:)``. Nil after the crash.
    public func itemKind(atPath path: String) -> FileItemKind? {
        let p = Self.normalize(path)
        return state.withLock { s in
            if s.crashed { return nil }
            switch s.entries[p] {
            case .directory?: return .directory
            case .file?: return .file
            case nil: return nil
            }
        }
    }

    /// See ``FileSystem/open(_:mode:)``. The creating modes are mutating operations.
    public func open(_ path: String, mode: FileOpenMode) throws -> any FileSystemFile {
        let p = Self.normalize(path)
        let id: Int = try state.withLock { s in
            let dir = Self.parent(p)
            switch mode {
            case .readOnly, .readWrite: try s.checkAlive(p)
            case .createNew, .createOrTruncate: try s.beginMutation(p)
            }
            guard s.entries[dir] == .directory else { throw LogStoreError(.io, "No such directory.", path: dir) }
            let existing = s.entries[p]
            if existing == .directory { throw LogStoreError(.io, "Is a directory.", path: p) }
            switch (mode, existing) {
            case (.readOnly, .file(let id)?), (.readWrite, .file(let id)?):
                return id
            case (.readOnly, _), (.readWrite, _):
                throw LogStoreError(.io, "No such file.", path: p)
            case (.createNew, .file?):
                throw LogStoreError(.io, "File exists.", path: p)
            case (.createOrTruncate, .file(let id)?):
                try s.withInode(id, p) { inode in
                    if !inode.data.isEmpty {
                        inode.data.removeAll()
                        inode.unsynced.append(.truncate(0))
                    }
                }
                return id
            default:
                let id = s.nextInode
                s.nextInode += 1
                s.inodes[id] = Inode()
                s.entries[p] = .file(id)
                s.logDirectoryChange(dir, .link(p, .file(id)))
                return id
            }
        }
        return FaultInjectingFile(fs: self, path: p, inode: id, writable: mode != .readOnly)
    }

    /// See ``FileSystem/removeFile(atPath:)``. A mutating operation; the removal is unsynced
    /// until the directory is synced. Open handles keep working on the file's data.
    public func removeFile(atPath path: String) throws {
        let p = Self.normalize(path)
        try state.withLock { s in
            try s.beginMutation(p)
            guard let e = s.entries[p] else { return }
            guard case .file = e else { throw LogStoreError(.io, "Is a directory.", path: p) }
            s.entries[p] = nil
            s.logDirectoryChange(Self.parent(p), .unlink(p, e))
        }
    }

    /// See ``FileSystem/rename(from:to:)``. A mutating operation. Within one directory the rename
    /// is atomic in every crash image; across directories it is an unlink in the source directory
    /// and a link in the destination, each made durable by syncing its own directory.
    public func rename(from: String, to: String) throws {
        let f = Self.normalize(from)
        let t = Self.normalize(to)
        try state.withLock { s in
            try s.beginMutation(f)
            guard let e = s.entries[f], case .file = e else { throw LogStoreError(.io, "No such file.", path: f) }
            guard s.entries[Self.parent(t)] == .directory else { throw LogStoreError(.io, "No such directory.", path: Self.parent(t)) }
            if s.entries[t] == .directory { throw LogStoreError(.io, "Is a directory.", path: t) }
            if f == t { return }
            s.entries[f] = nil
            s.entries[t] = e
            if Self.parent(f) == Self.parent(t) {
                s.logDirectoryChange(Self.parent(f), .rename(from: f, to: t, e))
            } else {
                s.logDirectoryChange(Self.parent(f), .unlink(f, e))
                s.logDirectoryChange(Self.parent(t), .link(t, e))
            }
        }
    }

    /// See ``FileSystem/syncDirectory(atPath:)``. Makes the directory's entry changes durable
    /// (not the data of its files, and not its own entry in its parent). A mutating operation.
    public func syncDirectory(atPath path: String) throws {
        let p = Self.normalize(path)
        try state.withLock { s in
            try s.beginMutation(p)
            guard s.entries[p] == .directory else { throw LogStoreError(.io, "No such directory.", path: p) }
            guard let changes = s.unsyncedDirectoryChanges.removeValue(forKey: p) else { return }
            for c in changes { Self.apply(c, to: &s.durableEntries) }
        }
    }

    /// See ``FileSystem/lock(atPath:)``. A mutating operation (it may create the lock file).
    public func lock(atPath path: String) throws -> any FileSystemLock {
        let p = Self.normalize(path)
        try state.withLock { s in
            try s.beginMutation(p)
            if s.locks.contains(p) {
                throw LogStoreError(.locked, "The store is already open (another LogDataStore holds its lock). Close it first.", path: p)
            }
            let dir = Self.parent(p)
            guard s.entries[dir] == .directory else { throw LogStoreError(.io, "No such directory.", path: dir) }
            switch s.entries[p] {
            case .directory?: throw LogStoreError(.io, "Is a directory.", path: p)
            case .file?: break
            case nil:
                let id = s.nextInode
                s.nextInode += 1
                s.inodes[id] = Inode()
                s.entries[p] = .file(id)
                s.logDirectoryChange(dir, .link(p, .file(id)))
            }
            s.locks.insert(p)
        }
        return FaultInjectingLock(fs: self, path: p)
    }

    func unlock(_ p: String) { state.withLock { s in _ = s.locks.remove(p) } }
}

/// Harsher power-loss faults than the default model, off by default.
public struct PowerLossModel: Sendable, Hashable {
    /// Probability, per file with unsynced data, that its dirty sectors reach the disk in random
    /// order instead of as a prefix of its writes: a later sector of an append may survive while
    /// an earlier one does not (disk write caches reorder). Default 0.
    public var sectorReorderingProbability = 0.0
    /// The sector size for reordering. Default 512.
    public var sectorSize = 512

    /// The default model: no sector reordering.
    public init() {}
}

/// Dirty sector numbers of one file.
struct DirtySectors {
    var sectors: [Int] = []
    var seen: Set<Int> = []
    mutating func insert(range: Range<Int>, sectorSize: Int) {
        guard !range.isEmpty else { return }
        for s in (range.lowerBound / sectorSize)...((range.upperBound - 1) / sectorSize) where seen.insert(s).inserted {
            sectors.append(s)
        }
    }
}

/// Counts of the faults a crash image applied, for reporting how hard a run pushed the engine.
/// Add counts with `+=`.
public struct FaultCounts: Sendable, Equatable, CustomStringConvertible {
    /// Files that had unsynced changes when the image was taken.
    public var filesWithUnsyncedData = 0
    /// Files whose unsynced changes were all lost.
    public var unsyncedDataDropped = 0
    /// Files whose unsynced changes all survived.
    public var unsyncedDataKept = 0
    /// Files of which only a prefix of the unsynced changes survived (no torn write).
    public var unsyncedDataKeptPrefix = 0
    /// Torn writes whose missing part is simply absent (the file ends early).
    public var tornWritesShort = 0
    /// Torn writes whose missing part reads as zeros.
    public var tornWritesZeroFilled = 0
    /// Torn writes whose missing part reads as random garbage.
    public var tornWritesGarbageFilled = 0
    /// Unsynced directory entry changes (creations, removals) that survived.
    public var entryChangesKept = 0
    /// Unsynced directory entry changes that were lost.
    public var entryChangesDropped = 0
    /// Unsynced renames that survived (atomically).
    public var renamesKept = 0
    /// Unsynced renames that were lost (atomically).
    public var renamesDropped = 0
    /// Files whose dirty sectors were written back in random order (``PowerLossModel``).
    public var sectorsReordered = 0

    /// All zero.
    public init() {}

    /// Every torn write.
    public var tornWrites: Int { tornWritesShort + tornWritesZeroFilled + tornWritesGarbageFilled }

    /// Adds `rhs`'s counts to `lhs`.
    public static func += (lhs: inout FaultCounts, rhs: FaultCounts) {
        lhs.filesWithUnsyncedData += rhs.filesWithUnsyncedData
        lhs.unsyncedDataDropped += rhs.unsyncedDataDropped
        lhs.unsyncedDataKept += rhs.unsyncedDataKept
        lhs.unsyncedDataKeptPrefix += rhs.unsyncedDataKeptPrefix
        lhs.tornWritesShort += rhs.tornWritesShort
        lhs.tornWritesZeroFilled += rhs.tornWritesZeroFilled
        lhs.tornWritesGarbageFilled += rhs.tornWritesGarbageFilled
        lhs.entryChangesKept += rhs.entryChangesKept
        lhs.entryChangesDropped += rhs.entryChangesDropped
        lhs.renamesKept += rhs.renamesKept
        lhs.renamesDropped += rhs.renamesDropped
        lhs.sectorsReordered += rhs.sectorsReordered
    }

    /// One line: each fault kind and its count.
    public var description: String {
        "files with unsynced data \(filesWithUnsyncedData) (dropped \(unsyncedDataDropped), kept \(unsyncedDataKept), "
            + "prefix \(unsyncedDataKeptPrefix), torn \(tornWrites): short \(tornWritesShort) zeros \(tornWritesZeroFilled) "
            + "garbage \(tornWritesGarbageFilled)); entry changes kept \(entryChangesKept) dropped \(entryChangesDropped); "
            + "renames kept \(renamesKept) dropped \(renamesDropped)"
            + (sectorsReordered > 0 ? "; files with sectors reordered \(sectorsReordered)" : "")
    }
}

/// A lock held on a ``FaultInjectingFileSystem``. Sendable: `held` is behind its mutex.
final class FaultInjectingLock: FileSystemLock {
    let fs: FaultInjectingFileSystem
    let path: String
    let held = Mutex(true)
    init(fs: FaultInjectingFileSystem, path: String) {
        self.fs = fs
        self.path = path
    }
    deinit { unlock() }
    func unlock() {
        if held.withLock({ h in
            defer { h = false }
            return h
        }) {
            fs.unlock(path)
        }
    }
}

/// An open file of a ``FaultInjectingFileSystem``. Sendable: immutable fields, `closed` behind its
/// mutex, file data behind the file system's mutex.
final class FaultInjectingFile: FileSystemFile {
    let fs: FaultInjectingFileSystem
    let path: String
    let inode: Int
    let writable: Bool
    let closed = Mutex(false)

    init(fs: FaultInjectingFileSystem, path: String, inode: Int, writable: Bool) {
        self.fs = fs
        self.path = path
        self.inode = inode
        self.writable = writable
    }

    func check(write: Bool = false) throws {
        if closed.withLock({ $0 }) { throw LogStoreError(.io, "File used after close.", path: path) }
        if write && !writable { throw LogStoreError(.io, "File opened read-only.", path: path) }
    }

    func read(at offset: UInt64, count: Int) throws -> [UInt8] {
        try check()
        return try fs.state.withLock { s in
            try s.checkAlive(path)
            return try s.withInode(inode, path) { n in
                guard offset < UInt64(n.data.count), count > 0 else { return [] }
                let start = Int(offset)
                return ByteCopies.array(n.data, start..<min(n.data.count, start + count))
            }
        }
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        try check(write: true)
        let copy = ByteCopies.array(bytes)
        try fs.state.withLock { s in
            try s.beginMutation(path)
            try s.withInode(inode, path) { n in
                guard !copy.isEmpty else { return }
                let change = FaultInjectingFileSystem.FileChange.write(offset: Int(offset), bytes: copy)
                FaultInjectingFileSystem.apply(change, to: &n.data)
                n.unsynced.append(change)
            }
        }
    }

    func size() throws -> UInt64 {
        try check()
        return try fs.state.withLock { s in
            try s.checkAlive(path)
            return try s.withInode(inode, path) { UInt64($0.data.count) }
        }
    }

    func truncate(to size: UInt64) throws {
        try check(write: true)
        try fs.state.withLock { s in
            try s.beginMutation(path)
            try s.withInode(inode, path) { n in
                let change = FaultInjectingFileSystem.FileChange.truncate(Int(size))
                FaultInjectingFileSystem.apply(change, to: &n.data)
                n.unsynced.append(change)
            }
        }
    }

    func sync() throws {
        try check()
        try fs.state.withLock { s in
            try s.beginMutation(path)
            try s.withInode(inode, path) { n in
                n.durable = n.data
                n.unsynced.removeAll()
            }
        }
    }

    func close() throws {
        closed.withLock { $0 = true }
        try fs.state.withLock { try $0.checkAlive(path) }
    }
}

extension FaultInjectingFileSystem {
    /// The image a crash of this (crashed) file system leaves, drawn from `rng` the way both
    /// power-loss harnesses do: a process-crash image with probability `processCrashFraction`,
    /// else a power-loss image under `model` with a seed drawn from `rng`. Returns the image,
    /// whether it is a process crash, and a line for the harness's event log. Runs on the
    /// caller's thread; the image is a new file system, valid until it is dropped.
    func randomCrashImage(
        rng: inout SplitMix64, processCrashFraction: Double, model: PowerLossModel
    ) -> (image: FaultInjectingFileSystem, isProcessCrash: Bool, description: String) {
        if rng.chance(processCrashFraction) {
            return (processCrashImage(), true, "process-crash image")
        }
        let seed = rng.next()
        let image = powerLossImage(seed: seed, model: model)
        return (image, false, "power-loss image (seed \(seed)): \(image.faultsApplied)")
    }

    /// `error` in a harness's event log: a simulated crash as its code alone, anything else in full.
    static func shortDescription(of error: any Error) -> String {
        if isSimulatedCrash(error), let e = error as? LogStoreError { return "\(e.code): simulated crash" }
        return "\(error)"
    }
}
