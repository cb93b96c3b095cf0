import LogStoreCommandSupport
public import LogStoreEngine

extension StoreScan {
    /// Compares an engine's index with this scan's independent replay of the log: same item
    /// types, same record counts, every key at the same location (segment, frame, value offset and
    /// length, sequence number), and the same last sequence number. With `checkValues`, also reads
    /// every live value through the engine (its frame cache, decompression and bounds checks) and
    /// compares its checksum with the bytes the scan saw. Every secondary index must equal a
    /// rebuild from the records.
    ///
    /// Meaningful for an engine opened on the same files with ``RecoveryMode/salvage`` (which
    /// replays exactly what the scan replays and never writes). Runs on the calling thread; reads
    /// through the snapshot, which stays valid meanwhile. Returns `.index` damage issues, at most
    /// `limit` of them plus one that counts the rest; never throws (read errors become issues).
    public func compareIndex(with snapshot: EngineSnapshot, checkValues: Bool = true, limit: Int = 100) -> [StoreIssue] {
        var issues: [StoreIssue] = []
        var suppressed = 0
        func add(_ path: String?, _ offset: UInt32?, _ message: String) {
            if issues.count < limit {
                issues.append(StoreIssue(.damage, .index, path: path ?? directory, offset: offset.map { UInt64($0) }, message))
            } else {
                suppressed += 1
            }
        }
        func segmentPath(_ n: UInt32) -> String { _joinPath(directory, LogStoreFormat.segmentFileName(n)) }
        func describe(_ l: RecordLocation) -> String {
            l.isLegacy
                ? "segment \(l.segment) frame @\(l.offset) value \(l.legacy & 0x7fff_ffff)+\(l.length) seq \(l.sequence)"
                : "segment \(l.segment) record @\(l.offset)+\(l.length) seq \(l.sequence)"
        }

        if snapshot.index.sequence != lastSequence {
            add(nil, nil, "the engine's index is at sequence \(snapshot.index.sequence), the log replays to \(lastSequence)")
        }
        let engineTypes = snapshot.index.types
        let allTypes = Set(engineTypes.keys).union(index.keys).sorted()
        for type in allTypes {
            let mine = index[type] ?? [:]
            let theirs = engineTypes[type] ?? TypeIndex()
            if mine.count != theirs.count {
                add(nil, nil, "type \(type): the engine's index has \(theirs.count) records, the log replays to \(mine.count)")
            }
            for (key, entry) in mine.sorted(by: { $0.key < $1.key }) {
                let found: RecordLocation?
                do {
                    found = try theirs.location(key)
                } catch {
                    add(nil, nil, "\(type) key \(key): the engine's index cannot be read: \(error)")
                    continue
                }
                guard let loc = found else {
                    add(
                        segmentPath(entry.location.segment), entry.location.offset,
                        "\(type) key \(key) is live in the log but missing from the engine's index")
                    continue
                }
                guard loc == entry.location else {
                    add(
                        segmentPath(entry.location.segment), entry.location.offset,
                        "\(type) key \(key): the engine's index says \(describe(loc)), the log says \(describe(entry.location))")
                    continue
                }
                guard checkValues else { continue }
                do {
                    let value = try snapshot.read(loc)
                    let crc = value.withUnsafeBytes { CRC32C.checksum($0) }
                    if crc != entry.valueCRC {
                        add(
                            segmentPath(loc.segment), loc.offset,
                            "\(type) key \(key): the value the engine reads differs from the bytes in the log")
                    }
                } catch {
                    add(segmentPath(loc.segment), loc.offset, "\(type) key \(key): the engine cannot read the value: \(error)")
                }
            }
            do {
                try theirs.forEach { key, loc in
                    if mine[key] == nil {
                        add(
                            segmentPath(loc.segment), loc.offset, "\(type) key \(key) is in the engine's index but not live in the log"
                        )
                    }
                    return true
                }
            } catch {
                add(nil, nil, "type \(type): the engine's index cannot be read: \(error)")
            }
        }
        if suppressed > 0 {
            issues.append(StoreIssue(.damage, .index, path: directory, offset: nil, "\(suppressed) more index disagreements not listed"))
        }
        return issues
    }

    /// Checks the indexes the store's `CHECKPOINT` holds or names (the ones a store opens with;
    /// salvage recovery, which `verify` uses, never loads them): every secondary index must equal
    /// a rebuild from the records the checkpoint covers, read through `snapshot`'s segments, and
    /// the primary indexes of a format 4 checkpoint's runs must equal this scan's replay of the
    /// log up to the checkpoint's sequence, key by key. Nothing to check without a valid
    /// checkpoint of this store. `cipher` is the store key's for an encrypted store (its
    /// CHECKPOINT and runs are sealed). Returns `.index` damage issues (at most `limit` per check
    /// plus one that counts the rest); never throws.
    public func checkpointIndexIssues(
        fileSystem: any FileSystem, snapshot: EngineSnapshot, limit: Int = 100, cipher: (any StoreCipher)? = nil
    ) -> [StoreIssue] {
        let path = _joinPath(directory, LogStoreFormat.checkpointFileName)
        guard checkpoint != nil, let f = try? fileSystem.open(path, mode: .readOnly) else { return [] }
        defer { try? f.close() }
        guard let size = try? f.size(), let bytes = try? f.read(at: 0, count: Int(size)),
            case .success(let cp) = CheckpointFile.read(bytes, directory: directory, fs: fileSystem, validatingRuns: false, cipher: cipher),
            cp.storeId?.description == manifest?.storeId
        else { return [] }
        var issues: [StoreIssue] = []
        if cp.runReferences != nil, let expected = indexAtCheckpoint {
            issues += primaryRunIssues(cp, expected: expected, path: path, limit: limit)
        }
        do {
            issues += try cp.index.secondaryIndexProblems(read: { try snapshot.read($0) }).map {
                StoreIssue(.damage, .index, path: path, offset: nil, "secondary index \($0) (checkpoint at sequence \(cp.sequence))")
            }
        } catch {
            issues.append(
                StoreIssue(.damage, .index, path: path, offset: nil, "the checkpoint's secondary indexes cannot be checked: \(error)"))
        }
        return issues
    }

    /// The differences between the primary indexes `cp`'s runs hold and `expected` (the replay of
    /// the log up to the checkpoint's sequence).
    private func primaryRunIssues(_ cp: CheckpointFile, expected: [String: [RecordKey: ScanEntry]], path: String, limit: Int)
        -> [StoreIssue]
    {
        var issues: [StoreIssue] = []
        var suppressed = 0
        func add(_ message: String) {
            if issues.count < limit {
                issues.append(StoreIssue(.damage, .index, path: path, offset: nil, message + " (checkpoint at sequence \(cp.sequence))"))
            } else {
                suppressed += 1
            }
        }
        for type in Set(cp.index.types.keys).union(expected.keys).sorted() {
            let want = expected[type] ?? [:]
            let runs = cp.index.types[type] ?? TypeIndex()
            if runs.count != want.count {
                add("type \(type): the checkpoint's runs hold \(runs.count) records, the log replays to \(want.count)")
            }
            var seen = 0
            do {
                try runs.forEach { key, loc in
                    guard let entry = want[key] else {
                        add("\(type) key \(key) is in the checkpoint's runs but not live in the log at its sequence")
                        return true
                    }
                    seen += 1
                    if entry.location != loc { add("\(type) key \(key): the checkpoint's runs and the log disagree on its location") }
                    return true
                }
            } catch {
                add("type \(type): the checkpoint's runs cannot be read: \(error)")
                continue
            }
            if seen < want.count {
                add("type \(type): \(want.count - seen) records live in the log are missing from the checkpoint's runs")
            }
        }
        if suppressed > 0 {
            issues.append(
                StoreIssue(.damage, .index, path: path, offset: nil, "\(suppressed) more checkpoint run disagreements not listed"))
        }
        return issues
    }
}
