public import ArgumentParser
import LogStoreCommandSupport
import LogStoreEngine

/// `logstore-compact [compact] <store>`: offline compaction of a closed store. Prints the sizes
/// before and after and the gain. `--dry-run` only scans and estimates; `--into <dir>` writes a
/// compacted copy and leaves the store as it is; without either, the engine compacts the store
/// (new segments, then an atomic manifest switch; never an overwrite in place).
public struct CompactCommand: ParsableCommand {
    /// Name and help.
    public static let configuration = CommandConfiguration(
        commandName: "compact",
        abstract: "Reclaim the space of overwritten and deleted records (the default command).",
        discussion: """
            The store must be closed: compact takes its lock and exits 3 if an app has it open.
              logstore-compact <store> --dry-run      estimate, write nothing
              logstore-compact <store> --into <dir>   write a compacted copy to a new directory
              logstore-compact <store>                compact the store itself (online engine compaction: \
            a crash leaves the old or the new generation, never a mix)
              logstore-compact <store> --recompress   compact, and compress every record that compresses better \
            with its type's dictionary (trained as needed)

            \(exitCodesHelp)
            """)

    /// The store directory.
    @Argument(help: "The store directory.")
    public var store: String

    /// Estimate only.
    @Flag(name: .long, help: "Print what compaction would reclaim without writing anything.")
    public var dryRun = false

    /// Copy target.
    @Option(name: .long, help: "Write the compacted store into this new or empty directory instead of compacting in place.")
    public var into: String?

    /// Recompress as well (in place only).
    @Flag(name: .long, help: "Also compress the records that compress better with their item type's dictionary (trained as needed).")
    public var recompress = false

    /// Segment size of the copy.
    @Option(
        name: .long, help: "With --into: segment size of the new store (bytes; K, M, G suffixes). Default 64M.",
        transform: SalvageCommand.parseSize)
    public var segmentSize: Int?

    /// `--key-file`, `--key-env`: the key of an encrypted store.
    @OptionGroup public var key: KeyOptions

    /// `--json`, `--progress`.
    @OptionGroup public var common: CommonOptions

    /// Creates the command (ArgumentParser calls this).
    public init() {}

    /// Rejects `--dry-run` with `--into` and `--segment-size` without `--into`.
    public func validate() throws {
        if dryRun && into != nil { throw ValidationError("--dry-run and --into cannot be combined: a dry run writes nothing.") }
        if segmentSize != nil && into == nil { throw ValidationError("--segment-size applies only to --into.") }
        if recompress && (dryRun || into != nil) { throw ValidationError("--recompress applies only to compacting the store in place.") }
    }

    /// Compacts (or estimates) and prints sizes. Runs on the calling thread. Throws a failure
    /// carrying the exit status (not a store, locked, damaged, unavailable, I/O).
    public func run() throws {
        let dir = StoreAccess.resolve(store)
        try StoreAccess.requireStore(dir)
        let encryption = try StoreAccess.encryption(key, for: dir)
        let progress = ProgressLine(common.progress)
        defer { progress.finish() }
        if dryRun {
            try runDryRun(dir, encryption: encryption, progress)
        } else if let into {
            try runCopy(dir, into: StoreAccess.resolve(into), encryption: encryption, progress)
        } else {
            try runInPlace(dir, encryption: encryption, progress)
        }
    }

    struct Sizes {
        var bytes: UInt64
        var segments: Int
    }

    func runDryRun(_ dir: String, encryption: StoreEncryption, _ progress: ProgressLine) throws {
        let scan = try StoreAccess.withLock(dir) {
            try StoreScanner(directory: dir, fileSystem: StoreAccess.fs, decodeValues: false, cipher: encryption.cipher).scan { p in
                progress.update("scanning", done: p.bytesDone, total: p.bytesTotal)
            }
        }
        progress.finish()
        try StatsCommand.exitForIssues(scan, command: "compact")
        let compacted = scan.estimatedCompactedSegmentBytes()
        let segmentSize = UInt64(LogEngineOptions().segmentSize)
        let before = Sizes(bytes: scan.totalBytes, segments: scan.files.filter { $0.role == .segment }.count)
        // The copy's checkpoint is written from scratch: runs of the live records.
        let after = Sizes(
            bytes: scan.totalBytes - scan.segmentBytes - scan.strayBytes - scan.checkpointBytes + compacted + scan.estimatedRunBytes(),
            segments: Int(max(1, (compacted + segmentSize - 1) / segmentSize)))
        output(
            dir, mode: "dryRun", into: nil, before: before, after: after, estimated: true,
            extra: [
                ("liveRecords", .integer(scan.liveRecords)),
                ("liveBytes", .uint(scan.liveBytes)),
                ("deadBytes", .uint(scan.deadBytes)),
            ],
            notes: ["\(Format.count(scan.liveRecords)) live records, \(Format.bytes(scan.deadBytes)) dead", "dry run: nothing was written"])
    }

    func runCopy(_ dir: String, into target: String, encryption: StoreEncryption, _ progress: ProgressLine) throws {
        try StoreAccess.requireEmptyTarget(target, source: dir)
        let measured = StoreAccess.measure(dir)
        let engine = try StoreAccess.openIntact(dir, encryption: encryption, command: "compact")
        defer { try? engine.close() }
        let result = try StoreCopier.copy(
            try engine.snapshot(), intoNewStoreAt: target, segmentSize: segmentSize, encryption: encryption, progress: progress)
        progress.finish()
        let after = StoreAccess.measure(target)
        output(
            dir, mode: "copy", into: target, before: Sizes(bytes: measured.bytes, segments: measured.segments),
            after: Sizes(bytes: after.bytes, segments: after.segments), estimated: false,
            extra: [("liveRecords", .integer(result.records))],
            notes: ["\(Format.count(result.records)) live records copied to \(target); the store itself is unchanged"])
    }

    func runInPlace(_ dir: String, encryption: StoreEncryption, _ progress: ProgressLine) throws {
        let backend = CompactionBackends.current
        guard backend.isAvailable else { throw ToolFailure.compactionUnavailable }
        var options = LogEngineOptions()
        options.autoCompaction = false  // this command compacts, once, in the foreground
        options.autoRecompression = false
        let engine = try StoreAccess.openEngine(dir, options: options, encryption: encryption)
        let measured = StoreAccess.measure(dir)
        progress.phase(recompress ? "recompressing" : "compacting")
        let outcome: CompactionOutcome
        do {
            outcome = try recompress ? backend.recompress(engine) : backend.compact(engine)
            try engine.close()
        } catch {
            try? engine.close()
            throw error
        }
        progress.finish()
        let after = StoreAccess.measure(dir)
        output(
            dir, mode: "inPlace", into: nil, before: Sizes(bytes: measured.bytes, segments: measured.segments),
            after: Sizes(bytes: after.bytes, segments: after.segments), estimated: false,
            extra: [("engine", .object(outcome.details.map { ($0.0, .string($0.1)) }))],
            notes: outcome.details.map { "\($0.0): \($0.1)" })
    }

    func output(
        _ dir: String, mode: String, into: String?, before: Sizes, after: Sizes, estimated: Bool,
        extra: [(String, JSON)], notes: [String]
    ) {
        let gain = Int64(clamping: before.bytes) - Int64(clamping: after.bytes)
        if common.json {
            Console.out(
                JSON.object(
                    [
                        ("command", .string("compact")),
                        ("store", .string(dir)),
                        ("mode", .string(mode)),
                        ("into", into.map { .string($0) } ?? .null),
                        ("before", .object([("bytes", .uint(before.bytes)), ("segments", .integer(before.segments))])),
                        (
                            "after",
                            .object([
                                ("bytes", .uint(after.bytes)), ("segments", .integer(after.segments)), ("estimated", .bool(estimated)),
                            ])
                        ),
                        ("gainBytes", .int(gain)),
                        ("gainRatio", .double(before.bytes == 0 ? 0 : (Double(gain) / Double(before.bytes) * 1000).rounded() / 1000)),
                    ] + extra
                ).rendered)
            return
        }
        let approx = estimated ? "~" : ""
        Console.out("compact \(dir)" + (into.map { " -> \($0)" } ?? ""))
        Console.out(
            "  before  " + Format.padLeft(Format.bytes(before.bytes), 11)
                + " in \(before.segments) segment\(before.segments == 1 ? "" : "s")")
        Console.out(
            "  after  " + Format.padLeft(approx + Format.bytes(after.bytes), 12)
                + " in \(after.segments) segment\(after.segments == 1 ? "" : "s")" + (estimated ? " (estimate)" : ""))
        let ratio = before.bytes == 0 ? "0.0%" : Format.fixed(Double(gain) * 100 / Double(before.bytes), 1) + "%"
        Console.out("  gain   " + Format.padLeft(approx + Format.signedBytes(gain), 12) + " (\(ratio))")
        for n in notes { Console.out("  " + n) }
    }
}
