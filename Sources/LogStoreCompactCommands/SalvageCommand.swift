public import ArgumentParser
import Foundation
import LogStoreCommandSupport
import LogStoreEngine

/// `logstore-compact salvage <store> --into <dir>`: copies every valid transaction's records into
/// a new store and reports what it had to drop. The damaged store is only read.
public struct SalvageCommand: ParsableCommand {
    /// Name and help.
    public static let configuration = CommandConfiguration(
        commandName: "salvage",
        abstract: "Copy every valid transaction of a damaged store into a new store.",
        discussion: """
            Opens the store with salvage recovery (every valid transaction is kept, damaged \
            ranges are skipped and reported) and writes its records into a new store at --into, \
            which must be missing or empty. If MANIFEST is missing or damaged, the segment files \
            are read in file-number order (from a temporary copy next to the target). The damaged \
            store is never modified. Exit 0 when nothing was dropped, 1 when data was dropped \
            (listed on stdout).

            \(exitCodesHelp)
            """)

    /// The damaged store.
    @Argument(help: "The store directory to salvage (only read).")
    public var store: String

    /// Where the new store goes.
    @Option(name: .long, help: "Directory for the new store; must not exist or be empty.")
    public var into: String

    /// Segment size of the new store.
    @Option(name: .long, help: "Segment size of the new store (bytes; K, M, G suffixes). Default 64M.", transform: SalvageCommand.parseSize)
    public var segmentSize: Int?

    /// `--key-file`, `--key-env`: the key of an encrypted store.
    @OptionGroup public var key: KeyOptions

    /// `--json`, `--progress`.
    @OptionGroup public var common: CommonOptions

    /// Creates the command (ArgumentParser calls this).
    public init() {}

    static func parseSize(_ text: String) throws -> Int {
        guard let size = ByteSize(parsing: text) else {
            throw ValidationError("'\(text)' is not a size; use bytes or a K, M or G suffix (e.g. 64M).")
        }
        return size.bytes
    }

    /// Salvages and prints the report. Runs on the calling thread. Throws a failure carrying the
    /// exit status (not a store, locked, non-empty target, I/O), or `ExitCode(1)` after the
    /// report when something was dropped.
    public func run() throws {
        let source = StoreAccess.resolve(store)
        let target = StoreAccess.resolve(into)
        try StoreAccess.requireStore(source)
        let encryption = try StoreAccess.encryption(key, for: source)
        try StoreAccess.requireEmptyTarget(target, source: source)
        let progress = ProgressLine(common.progress)
        defer { progress.finish() }

        // A missing, empty or garbled MANIFEST is the engine's job in salvage mode: it rebuilds the
        // segment list from the files' headers and reports that in `dropped`.
        let manifestPath = _joinPath(source, LogStoreFormat.manifestFileName)
        let (report, copied) = try Self.salvage(
            from: source, into: target, segmentSize: segmentSize, encryption: encryption, progress: progress)
        let manifestRebuilt = report.dropped.contains { $0.path == manifestPath }
        if let m = report.dropped.first(where: { $0.path == manifestPath }) {
            Console.err("logstore-compact: \(m.reason).")
        }
        progress.finish()

        let droppedBytes = report.dropped.reduce(0) { $0 + $1.bytes }
        let after = StoreAccess.measure(target)
        if common.json {
            Console.out(
                JSON.object([
                    ("command", .string("salvage")),
                    ("store", .string(source)),
                    ("into", .string(target)),
                    ("ok", .bool(report.dropped.isEmpty)),
                    ("records", .integer(copied.records)),
                    ("valueBytes", .uint(copied.valueBytes)),
                    ("types", .object(copied.types.keys.sorted().map { ($0, .integer(copied.types[$0] ?? 0)) })),
                    ("transactionsRead", .integer(report.transactionsReplayed)),
                    ("lastSequence", .uint(report.lastSequence)),
                    ("manifestRebuilt", .bool(manifestRebuilt)),
                    ("dropped", .array(report.dropped.map(\.json))),
                    ("droppedBytes", .uint(droppedBytes)),
                    ("tornTail", report.truncatedTail.map(\.json) ?? .null),
                    ("newStore", .object([("bytes", .uint(after.bytes)), ("segments", .integer(after.segments))])),
                ]).rendered)
        } else {
            Console.out("salvage \(source) -> \(target)")
            Console.out("  read \(Format.count(report.transactionsReplayed)) valid transactions (last sequence \(report.lastSequence))")
            Console.out(
                "  copied \(Format.count(copied.records)) records (\(Format.bytes(copied.valueBytes)) of values) into \(after.segments) segment\(after.segments == 1 ? "" : "s"), \(Format.bytes(after.bytes))"
            )
            for t in copied.types.keys.sorted() {
                Console.out("    " + Format.pad(t, 20) + Format.padLeft(Format.count(copied.types[t] ?? 0), 9))
            }
            if let t = report.truncatedTail {
                Console.out("  ignored a torn tail (an interrupted append, not committed data): \(t)")
            }
            if report.dropped.isEmpty {
                Console.out("OK: nothing dropped")
            } else {
                Console.out(
                    "DROPPED \(report.dropped.count) damaged range\(report.dropped.count == 1 ? "" : "s") (\(Format.bytes(droppedBytes))):")
                for d in report.dropped { Console.out("  \(d)") }
            }
        }
        if !report.dropped.isEmpty { throw ExitCode(ToolExitCode.damage.rawValue) }
    }

    /// Opens `source` with salvage recovery and copies its snapshot into a new store at `target`.
    static func salvage(
        from source: String, into target: String, segmentSize: Int?, encryption: StoreEncryption = .none, progress: ProgressLine
    ) throws -> (
        RecoveryReport, StoreCopier.Result
    ) {
        let engine = try StoreAccess.openEngine(source, options: StoreAccess.readOnlyOptions, encryption: encryption)
        defer { try? engine.close() }
        let result = try StoreCopier.copy(
            try engine.snapshot(), intoNewStoreAt: target, segmentSize: segmentSize, encryption: encryption, progress: progress)
        return (engine.recoveryReport, result)
    }
}
