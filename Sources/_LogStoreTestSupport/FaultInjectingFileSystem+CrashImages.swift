import LogStoreEngine
import Synchronization

/// Building the disk a crash leaves: power-loss and process-crash images (Docs/Testing.md,
/// "Fault model").
extension FaultInjectingFileSystem {
    // MARK: Crash images

    /// What kind of crash an image simulates.
    public enum CrashKind: Sendable, Hashable {
        /// The machine lost power: unsynced data and directory entries may be lost, kept or torn.
        case powerLoss
        /// The process was killed (`kill -9`): everything written to the OS survives (still
        /// unsynced where it was).
        case processCrash
    }

    /// A new file system as a power loss at this moment could leave the disk (see the type's
    /// fault model). Every byte and entry of the image is durable. The same seed on the same state
    /// gives the same image. Does not change this instance (crashed or not); callable at any time.
    public func powerLossImage(seed: UInt64) -> FaultInjectingFileSystem {
        buildPowerLossImage(seed: seed, model: PowerLossModel())
    }

    /// Like ``powerLossImage(seed:)``, with the harsher faults `model` enables.
    public func powerLossImage(seed: UInt64, model: PowerLossModel) -> FaultInjectingFileSystem {
        buildPowerLossImage(seed: seed, model: model)
    }

    /// A new file system as a `kill -9` at this moment leaves it: all data and entries written
    /// so far, nothing torn. What was not yet durable stays not durable (it lives in the OS's
    /// page cache, which survives the process), so a later power loss on the image can still lose
    /// it. Locks are released; handles of this instance do not carry over.
    public func processCrashImage() -> FaultInjectingFileSystem {
        var s = state.withLock { $0 }
        s.locks = []
        s.crashed = false
        s.countdown = nil
        s.mutations = 0
        return FaultInjectingFileSystem(state: s, faults: FaultCounts())
    }

    /// A new file system as a crash of `kind` at this moment leaves it; see
    /// ``powerLossImage(seed:)`` (the seed is used only for power losses) and
    /// ``processCrashImage()``.
    public func crashImage(_ kind: CrashKind, seed: UInt64) -> FaultInjectingFileSystem {
        switch kind {
        case .processCrash: return processCrashImage()
        case .powerLoss: return buildPowerLossImage(seed: seed, model: PowerLossModel())
        }
    }

    func buildPowerLossImage(seed: UInt64, model: PowerLossModel) -> FaultInjectingFileSystem {
        let s = state.withLock { $0 }
        var rng = SplitMix64(seed: seed)
        var faults = FaultCounts()

        // 1. The namespace.
        var names = s.durableEntries
        for dir in s.unsyncedDirectoryChanges.keys.sorted() {
            guard let changes = s.unsyncedDirectoryChanges[dir], !changes.isEmpty else { continue }
            let policy = rng.int(in: 0..<4)  // 0: drop all, 1: keep all, else: each on its own
            for change in changes {
                let keep = policy == 1 || (policy > 1 && rng.chance(0.5))
                if case .rename = change {
                    if keep { faults.renamesKept += 1 } else { faults.renamesDropped += 1 }
                } else {
                    if keep { faults.entryChangesKept += 1 } else { faults.entryChangesDropped += 1 }
                }
                if keep { Self.apply(change, to: &names) }
            }
        }
        // An entry whose directory did not survive is gone with it.
        for path in names.keys.sorted() where path != "/" {
            var dir = Self.parent(path)
            while dir != "/" {
                if names[dir] != .directory {
                    names[path] = nil
                    break
                }
                dir = Self.parent(dir)
            }
        }

        // 2. File contents, per inode, independently.
        var out = State()
        var newID: [Int: Int] = [:]
        let referenced = Set(names.values.compactMap { e -> Int? in if case .file(let id) = e { return id } else { return nil } })
        for id in referenced.sorted() {
            guard let inode = s.inodes[id] else { continue }
            let content: [UInt8]
            if !inode.unsynced.isEmpty && model.sectorReorderingProbability > 0 && rng.chance(model.sectorReorderingProbability) {
                content = Self.sectorReorderedContent(inode, sectorSize: max(1, model.sectorSize), &rng, &faults)
            } else {
                content = Self.powerLossContent(inode, &rng, &faults)
            }
            let nid = out.nextInode
            out.nextInode += 1
            newID[id] = nid
            out.inodes[nid] = Inode(data: content, durable: content, unsynced: [])
        }
        var entries: [String: Entry] = [:]
        for (path, e) in names {
            switch e {
            case .directory: entries[path] = .directory
            case .file(let id): if let nid = newID[id] { entries[path] = .file(nid) }
            }
        }
        entries["/"] = .directory
        out.entries = entries
        out.durableEntries = entries
        return FaultInjectingFileSystem(state: out, faults: faults)
    }

    static func apply(_ change: DirectoryChange, to names: inout [String: Entry]) {
        switch change {
        case .link(let p, let e):
            names[p] = e
        case .unlink(let p, let e):
            if names[p] == e { names[p] = nil }
        case .rename(let from, let to, let e):
            names[to] = e
            if names[from] == e { names[from] = nil }
        }
    }

    static func apply(_ change: FileChange, to data: inout [UInt8]) {
        switch change {
        case .write(let offset, let bytes):
            let end = offset + bytes.count
            if data.count < end { ByteCopies.resize(&data, to: end) }
            bytes.withUnsafeBytes { ByteCopies.copy($0, into: &data, at: offset) }
        case .truncate(let size):
            ByteCopies.resize(&data, to: size)
        }
    }

    /// One file's content after a power loss that wrote back its dirty sectors in any order: each
    /// sector touched since the last sync independently holds its new or its durable bytes
    /// (zeros past the durable end), and the size is the old or the new one.
    static func sectorReorderedContent(_ inode: Inode, sectorSize: Int, _ rng: inout SplitMix64, _ faults: inout FaultCounts) -> [UInt8] {
        faults.filesWithUnsyncedData += 1
        faults.sectorsReordered += 1
        let new = inode.data
        let old = inode.durable
        var dirty = DirtySectors()
        for c in inode.unsynced {
            switch c {
            case .write(let offset, let bytes): dirty.insert(range: offset..<(offset + bytes.count), sectorSize: sectorSize)
            case .truncate(let size): dirty.insert(range: min(size, old.count)..<max(size, old.count), sectorSize: sectorSize)
            }
        }
        let size = rng.chance(0.5) ? new.count : old.count
        var out: [UInt8] = []
        ByteCopies.resize(&out, to: size)
        ByteCopies.copy(0..<min(size, old.count), of: old, into: &out)
        for sector in dirty.sectors where rng.chance(0.5) {
            let start = sector * sectorSize
            guard start < size else { continue }
            ByteCopies.copy(start..<min(start + sectorSize, size), of: new, into: &out)
        }
        return out
    }

    /// One file's content after a power loss: its durable bytes plus some of its unsynced changes.
    static func powerLossContent(_ inode: Inode, _ rng: inout SplitMix64, _ faults: inout FaultCounts) -> [UInt8] {
        let changes = inode.unsynced
        guard !changes.isEmpty else { return inode.durable }
        faults.filesWithUnsyncedData += 1
        var data = inode.durable
        let kept: Int
        var tear = false
        switch rng.int(in: 0..<4) {
        case 0: kept = 0
        case 1: kept = changes.count
        default:
            kept = rng.int(in: 0..<changes.count)
            tear = rng.chance(0.6)
        }
        for c in changes[0..<kept] { apply(c, to: &data) }
        if tear, case .write(let offset, let bytes) = changes[kept], !bytes.isEmpty {
            // The write reached the disk up to byte `cut`; after it: nothing, zeros or garbage.
            let style = rng.int(in: 0..<3)
            let cut = rng.int(in: 0..<bytes.count)
            var torn = ByteCopies.array(bytes, 0..<cut)
            switch style {
            case 0: faults.tornWritesShort += 1
            case 1:
                ByteCopies.resize(&torn, to: bytes.count)
                faults.tornWritesZeroFilled += 1
            default:
                torn.append(contentsOf: rng.bytes(bytes.count - cut))
                faults.tornWritesGarbageFilled += 1
            }
            if !torn.isEmpty { apply(.write(offset: offset, bytes: torn), to: &data) }
        } else if kept == 0 {
            faults.unsyncedDataDropped += 1
        } else if kept == changes.count {
            faults.unsyncedDataKept += 1
        } else {
            faults.unsyncedDataKeptPrefix += 1
        }
        return data
    }
}
