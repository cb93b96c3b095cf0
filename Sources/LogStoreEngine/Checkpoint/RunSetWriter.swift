/// Writes the runs of one checkpoint into a directory: per index, nothing (it keeps its runs), a
/// delta run or a new base run; with `fresh`, a base run for every index (a backup, whose
/// directory holds none of the store's runs). Each run file is synced; the caller syncs the
/// directory before a CHECKPOINT names them. The runs of an encrypted store are sealed with its
/// `cipher` (``RunFile``). Used on one thread.
struct RunSetWriter {
    let fs: any FileSystem
    let directory: String
    let storeId: StoreID
    /// The store's cipher: every run written is sealed with it; nil: clear runs.
    let cipher: (any StoreCipher)?
    let sequence: UInt64
    /// Whether every index gets a new base run.
    let fresh: Bool
    /// The next run number.
    private(set) var next: UInt32
    /// Runs written by this checkpoint.
    private(set) var written: [MappedRun] = []
    /// Every run the new checkpoint names (written or kept).
    private(set) var used: [MappedRun] = []

    init(
        fs: any FileSystem, directory: String, storeId: StoreID, cipher: (any StoreCipher)?, sequence: UInt64, next: UInt32,
        fresh: Bool = false
    ) {
        self.fs = fs
        self.directory = directory
        self.storeId = storeId
        self.cipher = cipher
        self.sequence = sequence
        self.next = next
        self.fresh = fresh
    }

    /// Whether an index with `changes` tree entries over `base` (and `delta`) gets a new base.
    static func folds(changes: Int, base: MappedRun?, delta: MappedRun?) -> Bool {
        guard let base else { return true }
        return changes + (delta?.entryCount ?? 0) > max(65_536, base.entryCount / 20)
    }

    /// Writes the runs of every index of `index`; returns the index as read from its runs (empty
    /// trees) and the checkpoint's references to them.
    mutating func write(_ index: IndexState) throws -> (IndexState, [CheckpointFileV4.Index]) {
        let (storeId, sequence, cipher) = (self.storeId, self.sequence, self.cipher)
        var out = IndexState()
        out.sequence = index.sequence
        out.meta = index.meta
        var refs: [CheckpointFileV4.Index] = []
        for type in index.types.keys.sorted() {
            guard let t = index.types[type], !t.isEmpty else { continue }
            let (base, delta) = try runs(current: t.runs, changes: t.treeCount) { fold, number, sink in
                try t.writeRun(delta: !fold, storeId: storeId, runNumber: number, sequence: sequence, cipher: cipher, sink: sink)
            }
            let rebuilt = TypeIndex(base: base, deltaRun: delta)
            out.types[type] = rebuilt
            refs.append(
                .init(
                    type: type, definition: nil, base: base.map { RunWitness($0.header) }, delta: delta.map { RunWitness($0.header) },
                    entryCount: UInt64(rebuilt.count)))
        }
        for type in index.secondary.keys.sorted() {
            for (name, s) in index.secondaryIndexes(ofType: type).sorted(by: { $0.key < $1.key }) {
                var base: MappedRun? = nil
                var delta: MappedRun? = nil
                if s.entries.count > 0 {
                    (base, delta) = try runs(current: s.entries.runs, changes: s.entries.treeCount) { fold, number, sink in
                        try s.entries.writeRun(
                            delta: !fold, storeId: storeId, runNumber: number, sequence: sequence, cipher: cipher, sink: sink)
                    }
                }
                let entries = SecondaryEntries(base: base, deltaRun: delta)
                out.secondary[type, default: [:]][name] = SecondaryIndex(definition: s.definition, entries: entries)
                refs.append(
                    .init(
                        type: type, definition: s.definition, base: base.map { RunWitness($0.header) },
                        delta: delta.map { RunWitness($0.header) },
                        entryCount: UInt64(entries.count)))
            }
        }
        return (out, refs)
    }

    /// The runs an index with runs `current` and `changes` tree entries is named with: its own
    /// when nothing changed, else a new delta run over its base, or a new base (``folds``).
    private mutating func runs(
        current: (base: MappedRun?, delta: MappedRun?), changes: Int, _ body: (Bool, UInt32, any RunSink) throws -> RunHeader
    ) throws -> (MappedRun?, MappedRun?) {
        if !fresh, changes == 0, current.base != nil {
            used += [current.base, current.delta].compactMap { $0 }
            return current
        }
        let fold = fresh || Self.folds(changes: changes, base: current.base, delta: current.delta)
        let run = try writeRun { number, sink in try body(fold, number, sink) }
        if fold { return (run, nil) }
        if let b = current.base { used.append(b) }
        return (current.base, run)
    }

    /// Writes one run file with the next number, syncs it and opens it.
    private mutating func writeRun(_ body: (UInt32, any RunSink) throws -> RunHeader) throws -> MappedRun {
        let number = next
        guard number < UInt32.max else { throw LogStoreError(.corruption, "Run file numbers are exhausted.", path: directory) }
        next += 1
        let path = _joinPath(directory, RunFile.fileName(number))
        let file = try fs.open(path, mode: .createOrTruncate)
        do {
            _ = try body(number, RunFileSink(file: file))
            try file.sync()
            try file.close()
        } catch {
            try? file.close()
            try? fs.removeFile(atPath: path)
            throw error
        }
        let run = try MappedRun.open(path: path, fs: fs, cipher: cipher, storeId: storeId)
        written.append(run)
        used.append(run)
        return run
    }
}
