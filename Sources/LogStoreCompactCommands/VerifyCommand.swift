public import ArgumentParser
import LogStoreCommandSupport
import LogStoreEngine

/// `logstore-compact verify <store>`: checks every checksum and structure of every file and that
/// the engine's index agrees with an independent replay of the log. Exit 0 when clean, 1 with a
/// report (file, offset, what is wrong) when damaged. Writes nothing.
public struct VerifyCommand: ParsableCommand {
    /// Name and help.
    public static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every checksum, structure and value, and that the engine's index agrees with the log.",
        discussion: """
            1. Scans the files directly (works on a store the engine refuses to open): MANIFEST, \
            segment headers, every frame's CRC-32C and lengths, LZ4 payloads, transaction \
            structure and sequence order, every record, every value (as an attribute value).
            2. Opens the engine read-only (salvage recovery: nothing is cut or removed) and compares \
            its index with the scan's replay, key by key, reading every live value back.
            3. Checks that the secondary indexes the checkpoint holds equal a rebuild from the \
            records it covers.

            Damage is reported with file and byte offset; a torn tail (an interrupted append, cut \
            by the next open) and stray files are warnings and do not fail verification.

            \(exitCodesHelp)
            """)

    /// The store directory.
    @Argument(help: "The store directory.")
    public var store: String

    /// Skip decoding values.
    @Flag(name: .long, help: "Do not decode values as attribute values (for engine-level stores holding other bytes).")
    public var noValues = false

    /// Skip the engine comparison.
    @Flag(name: .long, help: "Only scan the files; do not open the engine to compare its index.")
    public var noIndex = false

    /// `--key-file`, `--key-env`: the key of an encrypted store.
    @OptionGroup public var key: KeyOptions

    /// `--json`, `--progress`.
    @OptionGroup public var common: CommonOptions

    /// Creates the command (ArgumentParser calls this).
    public init() {}

    /// Verifies and prints the report. Runs on the calling thread. Throws a failure carrying the
    /// exit status (not a store, locked, I/O), or `ExitCode(1)` after the report when damaged.
    public func run() throws {
        let dir = StoreAccess.resolve(store)
        try StoreAccess.requireStore(dir)
        let encryption = try StoreAccess.encryption(key, for: dir)
        let progress = ProgressLine(common.progress)
        var scan = try StoreAccess.withLock(dir) {
            try StoreScanner(directory: dir, fileSystem: StoreAccess.fs, decodeValues: !noValues, cipher: encryption.cipher).scan { p in
                progress.update("checking files", done: p.bytesDone, total: p.bytesTotal)
            }
        }
        var indexEntries = 0
        var indexCompared = false
        let newer = scan.issues.contains { $0.kind == .unsupportedVersion }
        // A listed last segment that was never created (interrupted roll-over) is recreated by a
        // normal open, but a read-only open cannot do that: compare nothing rather than report a
        // refusal that is not damage.
        let rollOverPending = scan.issues.contains { $0.kind == .file && $0.severity == .warning }
        if rollOverPending && !noIndex {
            scan.issues.append(
                StoreIssue(
                    .warning, .index, path: dir, offset: nil, "index not compared: the last segment is missing (the next open creates it)"))
        }
        if !noIndex && scan.manifest != nil && !newer && !rollOverPending {
            progress.phase("comparing the engine's index with the log")
            do {
                let engine = try StoreAccess.openEngine(dir, options: StoreAccess.readOnlyOptions, encryption: encryption)
                defer { try? engine.close() }
                let snapshot = try engine.snapshot()
                scan.issues += scan.compareIndex(with: snapshot, checkValues: true)
                scan.issues += scan.checkpointIndexIssues(fileSystem: StoreAccess.fs, snapshot: snapshot, cipher: encryption.cipher)
                indexEntries = snapshot.totalCount
                indexCompared = true
            } catch let failure as ToolFailure {
                progress.finish()
                throw failure
            } catch let e as LogStoreError {
                scan.issues.append(
                    StoreIssue(
                        .damage, .engineOpen, path: e.path ?? dir, offset: e.offset, "the engine refuses to open the store: \(e.message)"))
            }
        }
        progress.finish()

        let damage = scan.issues.filter { $0.severity == .damage }.count
        let warnings = scan.issues.count - damage
        if common.json {
            Console.out(
                JSON.object([
                    ("command", .string("verify")),
                    ("store", .string(dir)),
                    ("ok", .bool(damage == 0)),
                    ("damage", .integer(damage)),
                    ("warnings", .integer(warnings)),
                    (
                        "checked",
                        .object([
                            ("files", .integer(scan.files.count)),
                            ("segments", .integer(scan.segments.count)),
                            ("bytes", .uint(scan.segmentBytes)),
                            ("frames", .integer(scan.frames)),
                            ("transactions", .integer(scan.transactions + scan.transactionsAfterDamage)),
                            ("records", .integer(scan.records)),
                            ("values", .integer(scan.valuesDecoded)),
                            ("indexCompared", .bool(indexCompared)),
                            ("indexEntries", .integer(indexEntries)),
                        ])
                    ),
                    ("transactionsAfterDamage", .integer(scan.transactionsAfterDamage)),
                    ("issues", .array(scan.issues.map(\.json))),
                ]).rendered)
        } else {
            Console.out("verify \(dir)")
            Console.out(
                "  checked \(scan.files.count) files, \(scan.segments.count) segments (\(Format.bytes(scan.segmentBytes))), "
                    + "\(Format.count(scan.frames)) frames, \(Format.count(scan.transactions + scan.transactionsAfterDamage)) transactions, "
                    + "\(Format.count(scan.records)) records, \(Format.count(scan.valuesDecoded)) values"
                    + (indexCompared ? ", \(Format.count(indexEntries)) index entries" : ""))
            for issue in scan.issues { Console.out("  " + issue.line) }
            if scan.transactionsAfterDamage > 0 {
                Console.out(
                    "  \(Format.count(scan.transactionsAfterDamage)) valid transactions follow damage in their segment: the engine does not replay them and salvage drops them"
                )
            }
            if damage == 0 {
                Console.out("OK" + (warnings > 0 ? " (\(warnings) warning\(warnings == 1 ? "" : "s"))" : ""))
            } else {
                Console.out(
                    "DAMAGED: \(damage) problem\(damage == 1 ? "" : "s")"
                        + (warnings > 0 ? ", \(warnings) warning\(warnings == 1 ? "" : "s")" : "")
                        + ". `logstore-compact salvage <store> --into <new-dir>` copies every valid transaction into a new store.")
            }
        }
        if newer { throw ExitCode(ToolExitCode.notAStore.rawValue) }
        if damage > 0 { throw ExitCode(ToolExitCode.damage.rawValue) }
    }
}
