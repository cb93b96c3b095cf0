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

    /// Reads, decodes and checks `CHECKPOINT` against `manifest` and the segment files.
    /// Never throws: anything wrong makes it `.rejected` with the reason.
    static func loadCheckpoint(directory: String, fs: any FileSystem, manifest: ManifestFile, options: LogEngineOptions) -> CheckpointLoad {
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
            do throws(_DecodeError) { return .success(try CheckpointFile.decode(buf)) } catch { return .failure(error) }
        }
        let cp: CheckpointFile
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
        return .adopted(cp, opened: opened)
    }
}
