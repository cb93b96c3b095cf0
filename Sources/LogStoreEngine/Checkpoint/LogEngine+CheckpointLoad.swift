import Foundation
import Logging

/// What recovery made of the CHECKPOINT file.
enum CheckpointLoad {
    /// Usable: its index, and the covered segments before the resume position, already opened.
    case adopted(CheckpointFile, opened: [UInt32: SegmentFile])
    /// Not usable; the whole log is replayed. `witness`: the last sequence the checkpoint says was
    /// committed and synced, when it decoded (a checkpoint is written only after the log it covers
    /// is durable, so the log must reach that sequence).
    case rejected(String, witness: UInt64?)
    /// Proof of lost data: a segment the checkpoint covers is missing or shorter than the length
    /// the checkpoint recorded, so committed, synced transactions (up to `witness`) are gone.
    case contradicted(String, path: String, witness: UInt64)
}

extension LogEngine {
    // MARK: Loading

    /// Reads, decodes and checks `CHECKPOINT` against `manifest` and the segment files. `cipher`
    /// is the store's (chosen by MANIFEST's key check; nil: a clear store): a sealed checkpoint
    /// and its runs are opened with it, and one whose cipher is not the store's, or that does not
    /// authenticate, is rejected like a damaged one. Never throws: anything wrong makes it
    /// `.rejected` with the reason.
    static func loadCheckpoint(
        directory: String, fs: any FileSystem, manifest: ManifestFile, options: LogEngineOptions, cipher: (any StoreCipher)?
    ) -> CheckpointLoad {
        let path = _joinPath(directory, LogStoreFormat.checkpointFileName)
        let bytes: [UInt8]
        do {
            let f = try fs.open(path, mode: .readOnly)
            defer { try? f.close() }
            let size = try f.size()
            guard size <= UInt64(Int.max) else { return .rejected("checkpoint file is implausibly large", witness: nil) }
            bytes = try f.read(at: 0, count: Int(size))
        } catch {
            return .rejected("checkpoint unreadable: \(error)", witness: nil)
        }
        let decoded: Result<CheckpointFile, _DecodeError> = bytes.withUnsafeBytes { buf in
            do throws(_DecodeError) { return .success(try CheckpointFile.decodeAnyVersion(buf, cipher: cipher)) } catch {
                return .failure(error)
            }
        }
        var cp: CheckpointFile
        switch decoded {
        case .success(let c): cp = c
        case .failure(let e): return .rejected("checkpoint damaged at offset \(e.offset): \(e.reason)", witness: nil)
        }
        guard cp.storeId == manifest.storeId else {
            // Another store's checkpoint (or one from before the upgrade to format v2): not this
            // log's index, and no witness of what this log committed.
            let what = cp.storeId.map { "store \($0)" } ?? "a format version \(cp.version) store"
            return .rejected(
                "CHECKPOINT belongs to \(what), not to this store (\(manifest.storeId.map { "\($0)" } ?? "format version \(manifest.version)"))",
                witness: nil)
        }
        let witness = cp.sequence
        guard cp.generation <= manifest.generation else {
            // Manifests are installed before anything is written under them, so a checkpoint of a
            // newer generation proves MANIFEST was replaced by an older copy: the segments it does
            // not list hold the newest data and must not be taken for strays.
            return .contradicted(
                "MANIFEST is generation \(manifest.generation), older than the checkpoint's \(cp.generation), which was written after it: MANIFEST was replaced by an older copy, and segments it does not list may hold committed data",
                path: _joinPath(directory, LogStoreFormat.manifestFileName), witness: witness)
        }
        let covered = cp.segments.map(\.number)
        guard covered.count <= manifest.segments.count, Array(manifest.segments.prefix(covered.count)) == covered else {
            return .rejected(
                "checkpoint covers segments \(covered) but the manifest lists \(manifest.segments) (generation \(cp.generation) vs \(manifest.generation)): the log was compacted after it was written",
                witness: witness)
        }
        var opened: [UInt32: SegmentFile] = [:]
        for (i, s) in cp.segments.enumerated() {
            let isPosition = i == cp.segments.count - 1
            let segPath = _joinPath(directory, LogStoreFormat.segmentFileName(s.number))
            do {
                guard fs.itemKind(atPath: segPath) == .file else {
                    return .contradicted(
                        "segment \(s.number) is listed in MANIFEST and the checkpoint recorded \(s.length) bytes of it, but its file is missing",
                        path: segPath, witness: witness)
                }
                let f = try fs.open(segPath, mode: .readOnly)
                let size = try f.size()
                guard size >= s.length else {
                    try? f.close()
                    return .contradicted(
                        "segment \(s.number) holds \(size) bytes, but the checkpoint recorded \(s.length) committed, synced bytes of it: it was truncated",
                        path: segPath, witness: witness)
                }
                let header = try f.read(at: 0, count: SegmentHeader.maxSize)
                guard case .ok(let h) = header.withUnsafeBytes({ SegmentHeader.decode($0) }), h.segment == s.number else {
                    try? f.close()
                    return .rejected("segment \(s.number) has a bad header", witness: witness)
                }
                if let id = h.storeId, id != manifest.storeId {
                    try? f.close()
                    return .rejected("segment \(s.number) belongs to store \(id), not to this store", witness: nil)
                }
                if isPosition || options.recovery != .strict {
                    try f.close()
                } else {
                    opened[s.number] = SegmentFile(number: s.number, file: f, header: h)
                }
            } catch {
                return .rejected("segment \(s.number) unreadable: \(error)", witness: witness)
            }
        }
        // Salvage replays every segment on its own terms; it only uses the checkpoint as a witness.
        guard options.recovery == .strict else { return .rejected("salvage mode replays the whole log", witness: witness) }
        if let references = cp.runReferences {
            switch openRuns(references, directory: directory, fs: fs, cipher: cipher) {
            case .success(let (index, runs)):
                cp.index = index
                cp.runs = runs
            case .failure(let reason):
                return .rejected(reason.message, witness: witness)
            }
        }
        return .adopted(cp, opened: opened)
    }
}

/// Why the runs a checkpoint names cannot be used.
struct RunRejection: Error {
    var message: String
}

extension LogEngine {
    /// Maps the runs CHECKPOINT 4 names and builds the index from them: every run's header page
    /// must equal its witness in the checkpoint and belong to this store, and every index must
    /// hold the count the checkpoint recorded (and each secondary index one entry per record).
    /// The runs must be sealed with `cipher` (nil: clear runs); their keys take the checkpoint's
    /// store id. Reads the header page of each run, nothing else. Fails with the reason otherwise.
    static func openRuns(_ cp: CheckpointFileV4, directory: String, fs: any FileSystem, cipher: (any StoreCipher)?) -> Result<
        (IndexState, [UInt32: MappedRun]), RunRejection
    > {
        var runs: [UInt32: MappedRun] = [:]
        func open(_ w: RunWitness?, _ kind: RunKind) throws(RunRejection) -> MappedRun? {
            guard let w else { return nil }
            let path = _joinPath(directory, RunFile.fileName(w.runNumber))
            guard fs.itemKind(atPath: path) == .file else {
                throw RunRejection(message: "run file \(w.runNumber) the checkpoint names is missing")
            }
            let run: MappedRun
            do { run = try MappedRun.open(path: path, fs: fs, cipher: cipher, storeId: cp.storeId) } catch {
                throw RunRejection(message: "run file \(w.runNumber) is unreadable: \(error)")
            }
            guard RunWitness(run.header) == w else {
                throw RunRejection(message: "run file \(w.runNumber) is not the one the checkpoint names (its header differs)")
            }
            guard run.header.storeId == cp.storeId, run.header.kind == kind, run.header.sequence <= cp.sequence else {
                throw RunRejection(message: "run file \(w.runNumber) belongs to another store or index, or is newer than the checkpoint")
            }
            runs[w.runNumber] = run
            return run
        }
        var index = IndexState()
        index.sequence = cp.sequence
        index.meta = cp.meta
        do throws(RunRejection) {
            for i in cp.indexes {
                if let definition = i.definition {
                    let entries = SecondaryEntries(base: try open(i.base, .secondaryBase), deltaRun: try open(i.delta, .secondaryDelta))
                    guard entries.count == Int(clamping: i.entryCount) else {
                        throw RunRejection(
                            message:
                                "index \(definition.name) of \(i.type): its runs hold \(entries.count) entries, the checkpoint \(i.entryCount)"
                        )
                    }
                    index.secondary[i.type, default: [:]][definition.name] = SecondaryIndex(definition: definition, entries: entries)
                } else {
                    let t = TypeIndex(base: try open(i.base, .primaryBase), deltaRun: try open(i.delta, .primaryDelta))
                    guard t.count == Int(clamping: i.entryCount), t.count > 0 else {
                        throw RunRejection(message: "type \(i.type): its runs hold \(t.count) entries, the checkpoint \(i.entryCount)")
                    }
                    index.types[i.type] = t
                }
            }
            for (type, indexes) in index.secondary {
                for (name, s) in indexes where s.entries.count != index.count(type) {
                    throw RunRejection(message: "index \(name) of \(type) has \(s.entries.count) entries for \(index.count(type)) records")
                }
            }
        } catch {
            return .failure(error)
        }
        return .success((index, runs))
    }
}

extension CheckpointFile {
    /// Decodes checkpoint bytes of any version this build reads: version 4 names run files
    /// (``runReferences``; ``index`` stays empty until they are opened), versions 1 to 3 hold the
    /// index itself (read only: format 3 stores, never encrypted). `cipher` is the store's (nil:
    /// clear), as ``CheckpointFileV4/decode(_:cipher:)`` takes it. Throws `_DecodeError` for
    /// anything else, and for a version 1 to 3 checkpoint when `cipher` is set.
    package static func decodeAnyVersion(_ buf: UnsafeRawBufferPointer, cipher: (any StoreCipher)?) throws(_DecodeError) -> CheckpointFile {
        guard CheckpointFileV4.version(of: buf) == CheckpointFileV4.version else {
            guard cipher == nil else { throw _DecodeError("a clear checkpoint of an older format in an encrypted store", at: 8) }
            return try decode(buf)
        }
        let v4 = try CheckpointFileV4.decode(buf, cipher: cipher)
        var c = CheckpointFile(
            version: 4, generation: v4.generation, sequence: v4.sequence, createdAtMillis: v4.createdAtMillis, segments: v4.segments,
            index: IndexState(), storeId: v4.storeId)
        c.index.meta = v4.meta
        c.runReferences = v4
        return c
    }

    /// What is wrong with a checkpoint a tool reads: the file (CHECKPOINT, or a run file it names)
    /// and the offset in it, when known.
    package struct Problem: Error, Sendable {
        package var message: String
        package var path: String
        package var offset: UInt64?
    }

    /// Reads `CHECKPOINT` bytes as the tools do (`logstore-compact verify` and `stats`): any
    /// version; for version 4 the run files it names in `directory` are opened, checked against
    /// their witnesses and, with `validatingRuns`, checked page by page (``RunValidator``), and
    /// ``index`` is read from them. `cipher` is the store's key (nil: a clear store), which opens
    /// a sealed checkpoint and its runs. Returns the checkpoint or its first problem; never
    /// throws. The result's runs stay mapped while it is held.
    package static func read(
        _ bytes: [UInt8], directory: String, fs: any FileSystem, validatingRuns: Bool, cipher: (any StoreCipher)? = nil
    ) -> Result<CheckpointFile, Problem> {
        let path = _joinPath(directory, LogStoreFormat.checkpointFileName)
        let decoded: Result<CheckpointFile, _DecodeError> = bytes.withUnsafeBytes { buf in
            do throws(_DecodeError) { return .success(try decodeAnyVersion(buf, cipher: cipher)) } catch { return .failure(error) }
        }
        var cp: CheckpointFile
        switch decoded {
        case .success(let c): cp = c
        case .failure(let e): return .failure(Problem(message: e.reason, path: path, offset: UInt64(e.offset)))
        }
        guard let references = cp.runReferences else { return .success(cp) }
        switch LogEngine.openRuns(references, directory: directory, fs: fs, cipher: cipher) {
        case .success(let (index, runs)):
            cp.index = index
            cp.runs = runs
        case .failure(let rejection):
            return .failure(Problem(message: rejection.message, path: path, offset: nil))
        }
        if validatingRuns {
            for number in cp.runs.keys.sorted() {
                guard let run = cp.runs[number] else { continue }
                do {
                    _ = try RunValidator.validate(run)
                } catch let e as LogStoreError {
                    return .failure(Problem(message: e.message, path: run.path, offset: e.offset))
                } catch {
                    return .failure(Problem(message: "\(error)", path: run.path, offset: nil))
                }
            }
        }
        return .success(cp)
    }
}
