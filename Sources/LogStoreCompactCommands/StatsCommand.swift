public import ArgumentParser
import Foundation
import LogStoreCommandSupport
import LogStoreEngine

/// `logstore-compact stats <store>`: segments, live and dead bytes, records per type,
/// compression ratio, sequence range and checkpoint, from a direct scan of the files (so it also
/// works on a damaged store). Takes the store's lock while it reads; writes nothing.
public struct StatsCommand: ParsableCommand {
    /// Name and help.
    public static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "Show segments, live/dead bytes, records per type, compression and sequence range.",
        discussion: """
            Reads the files directly (no engine), so it also describes a damaged store; damage \
            is listed and makes the exit status 1. Dead bytes are what compaction would reclaim: \
            overwritten and deleted records, tombstones, torn tails, damaged ranges.

            \(exitCodesHelp)
            """)

    /// The store directory.
    @Argument(help: "The store directory.")
    public var store: String

    /// `--key-file`, `--key-env`: the key of an encrypted store.
    @OptionGroup public var key: KeyOptions

    /// `--json`, `--progress`.
    @OptionGroup public var common: CommonOptions

    /// Creates the command (ArgumentParser calls this).
    public init() {}

    /// Scans the store and prints the figures. Runs on the calling thread. Throws a failure
    /// carrying the exit status (not a store, locked, I/O), or `ExitCode(1)` after printing when
    /// the store is damaged.
    public func run() throws {
        let dir = StoreAccess.resolve(store)
        try StoreAccess.requireStore(dir)
        // The key is checked, and opens an encrypted store's sealed CHECKPOINT and runs.
        let encryption = try StoreAccess.encryption(key, for: dir)
        let progress = ProgressLine(common.progress)
        let scan = try StoreAccess.withLock(dir) {
            try StoreScanner(directory: dir, fileSystem: StoreAccess.fs, decodeValues: false, cipher: encryption.cipher).scan { p in
                progress.update("scanning", done: p.bytesDone, total: p.bytesTotal)
            }
        }
        progress.finish()
        if common.json {
            Console.out(Self.json(scan).rendered)
        } else {
            Self.printText(scan)
        }
        try Self.exitForIssues(scan, command: "stats")
    }

    /// Exit 4 for a newer format, 1 for damage (after telling stderr what to run).
    static func exitForIssues(_ scan: StoreScan, command: String) throws {
        if scan.issues.contains(where: { $0.kind == .unsupportedVersion }) {
            Console.err("logstore-compact: the store was written by a newer LogStore format version; upgrade the tool.")
            throw ExitCode(ToolExitCode.notAStore.rawValue)
        }
        if scan.hasDamage {
            Console.err(
                "logstore-compact: the store is damaged; `logstore-compact verify` lists the damage and `salvage` recovers the valid transactions."
            )
            throw ExitCode(ToolExitCode.damage.rawValue)
        }
    }

    static func json(_ s: StoreScan) -> JSON {
        .object([
            ("command", .string("stats")),
            ("store", .string(s.directory)),
            ("formatVersion", s.manifest.map { .integer($0.version) } ?? .null),
            ("manifestGeneration", s.manifest.map { .uint($0.generation) } ?? .null),
            ("storeId", s.manifest?.storeId.map { .string($0) } ?? .null),
            ("files", .object([("count", .integer(s.files.count)), ("bytes", .uint(s.totalBytes))])),
            (
                "segments",
                .object([
                    ("count", .integer(s.segments.count)),
                    ("bytes", .uint(s.segmentBytes)),
                    ("list", .array(s.segments.map(segmentJSON))),
                ])
            ),
            ("liveBytes", .uint(s.liveBytes)),
            ("deadBytes", .uint(s.deadBytes)),
            ("overheadBytes", .uint(s.overheadBytes)),
            ("preallocatedBytes", .uint(s.preallocatedBytes)),
            ("strayBytes", .uint(s.strayBytes)),
            ("records", .object([("live", .integer(s.liveRecords)), ("inLog", .integer(s.records))])),
            ("types", .object(s.types.keys.sorted().map { ($0, typeJSON(s.types[$0] ?? .init())) })),
            (
                "compression",
                .object([
                    ("rawBytes", .uint(s.rawPayloadBytes)),
                    ("storedBytes", .uint(s.storedPayloadBytes)),
                    ("ratio", s.compressionRatio.map { .double(($0 * 1000).rounded() / 1000) } ?? .null),
                ])
            ),
            ("sequence", .object([("first", .optional(s.firstSequence)), ("last", .uint(s.lastSequence))])),
            ("transactions", .integer(s.transactions)),
            (
                "checkpoint",
                s.checkpointFiles.isEmpty
                    ? .null
                    : .object([
                        ("files", .array(s.checkpointFiles.map { .string($0.name) })),
                        ("sequence", .optional(s.checkpoint?.sequence)),
                        ("generation", .optional(s.checkpoint?.generation)),
                        ("ageSeconds", s.checkpoint.map { .double(Self.ageSeconds($0.createdAtMillis)) } ?? .null),
                    ])
            ),
            (
                "indexes",
                .array(
                    s.checkpointIndexes.map { i in
                        .object([
                            ("type", .string(i.type)), ("definition", .string(i.definition)), ("entries", .integer(i.entries)),
                            ("entryBytes", .integer(i.entryBytes)), ("estimatedMemoryBytes", .integer(i.estimatedMemoryBytes)),
                        ])
                    })
            ),
            ("issues", .array(s.issues.map(\.json))),
        ])
    }

    static func segmentJSON(_ seg: StoreScan.Segment) -> JSON {
        .object([
            ("number", .uint(UInt64(seg.number))),
            ("file", .string(LogStoreFormat.segmentFileName(seg.number))),
            ("bytes", .uint(seg.fileSize)),
            ("liveBytes", .uint(seg.liveBytes)),
            ("liveRecords", .integer(seg.liveRecords)),
            ("frames", .integer(seg.frames)),
            ("transactions", .integer(seg.transactions)),
            ("firstSequence", .optional(seg.firstSequence)),
            ("lastSequence", .optional(seg.lastSequence)),
            ("damaged", .bool(seg.damaged)),
        ])
    }

    static func typeJSON(_ t: StoreScan.TypeSummary) -> JSON {
        .object([
            ("live", .integer(t.liveRecords)),
            ("liveBytes", .uint(t.liveBytes)),
            ("valueBytes", .uint(t.liveValueBytes)),
            ("puts", .integer(t.puts)),
            ("deletes", .integer(t.deletes)),
            ("deleteAlls", .integer(t.deleteAlls)),
        ])
    }

    static func printText(_ s: StoreScan) {
        func row(_ label: String, _ value: String) { Console.out(Format.pad(label, 14) + value) }
        row("Store", s.directory)
        if let m = s.manifest {
            row("Format", "version \(m.version), manifest generation \(m.generation)" + (m.storeId.map { ", store \($0)" } ?? ""))
        } else {
            row("Format", "unknown (MANIFEST missing or damaged)")
        }
        row("Files", "\(s.files.count) files, \(Format.bytes(s.totalBytes))")
        row("Segments", "\(s.segments.count), \(Format.bytes(s.segmentBytes))")
        for seg in s.segments {
            let seq: String = seg.firstSequence.map { "seq \($0)...\(seg.lastSequence ?? $0)" } ?? "no transactions"
            let parts: [String] = [
                "  ", Format.pad(LogStoreFormat.segmentFileName(seg.number), 12),
                Format.padLeft(Format.bytes(seg.fileSize), 11), "  live ", Format.padLeft(Format.bytes(seg.liveBytes), 10),
                "  ", Format.padLeft(Format.count(seg.frames), 7), " frames  ", Format.padLeft(Format.count(seg.transactions), 7),
                " txns  ", seq, seg.damaged ? "  DAMAGED" : "",
            ]
            Console.out(parts.joined())
        }
        row(
            "Live",
            "\(Format.count(s.liveRecords)) records, \(Format.bytes(s.liveBytes)) (\(Format.percent(s.liveBytes, of: s.segmentBytes)))")
        row("Dead", "\(Format.bytes(s.deadBytes)) (\(Format.percent(s.deadBytes, of: s.segmentBytes))), reclaimable by compaction")
        row("Overhead", "\(Format.bytes(s.overheadBytes)) of segment and frame headers")
        if s.preallocatedBytes > 0 {
            row("Preallocated", "\(Format.bytes(s.preallocatedBytes)) of zeros after the tail's last transaction (cut at the next close)")
        }
        if s.strayBytes > 0 { row("Stray", "\(Format.bytes(s.strayBytes)) in unlisted segment files") }
        if let r = s.compressionRatio {
            row(
                "Compression",
                "\(Format.fixed(r, 2))x (\(Format.bytes(s.rawPayloadBytes)) raw, \(Format.bytes(s.storedPayloadBytes)) stored)")
        } else {
            row("Compression", "n/a (empty log)")
        }
        if let first = s.firstSequence {
            row("Sequence", "\(first)...\(s.lastSequence) (\(Format.count(s.transactions)) transactions)")
        } else {
            row("Sequence", "none (empty log)")
        }
        if let cp = s.checkpoint {
            let lag = s.lastSequence >= cp.sequence ? s.lastSequence - cp.sequence : 0
            row(
                "Checkpoint",
                "sequence \(cp.sequence) (\(Format.count(Int(lag))) transactions behind the log), written \(Int(Self.ageSeconds(cp.createdAtMillis))) s ago"
            )
        } else {
            row(
                "Checkpoint",
                s.checkpointFiles.isEmpty
                    ? "none" : s.checkpointFiles.map(\.name).joined(separator: ", ") + " (damaged: open ignores it and replays the log)")
        }
        if !s.checkpointIndexes.isEmpty {
            Console.out("Secondary indexes (as of the checkpoint)")
            for i in s.checkpointIndexes {
                Console.out(
                    "  \(i.type): \(i.definition)  \(Format.count(i.entries)) entries, \(Format.bytes(UInt64(i.entryBytes))) of entries, about \(Format.bytes(UInt64(i.estimatedMemoryBytes))) of memory"
                )
            }
        }
        if s.types.isEmpty {
            row("Types", "none")
        } else {
            Console.out("Types")
            let width = max(12, (s.types.keys.map(\.count).max() ?? 0) + 2)
            for name in s.types.keys.sorted() {
                let t = s.types[name] ?? .init()
                let parts: [String] = [
                    "  ", Format.pad(name, width), Format.padLeft(Format.count(t.liveRecords), 9), " live  ",
                    Format.padLeft(Format.bytes(t.liveBytes), 10),
                    "  (puts \(Format.count(t.puts)), deletes \(Format.count(t.deletes)), delete-alls \(Format.count(t.deleteAlls)))",
                ]
                Console.out(parts.joined())
            }
        }
        if !s.issues.isEmpty {
            Console.out("Issues")
            for i in s.issues { Console.out("  " + i.line) }
        }
    }

    /// Seconds since `millis` (milliseconds since 1970), never negative.
    static func ageSeconds(_ millis: UInt64) -> Double {
        max(0, Date().timeIntervalSince1970 - Double(millis) / 1000)
    }
}
