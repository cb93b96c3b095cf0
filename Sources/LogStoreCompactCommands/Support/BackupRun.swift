import Foundation
import LogStoreEngine

/// What `backup` and `restore` share: copying a closed store (or a backup, which is one) into a
/// new or earlier backup directory through ``LogEngine/backup(to:fileSystem:verification:progress:)``,
/// with the progress line and the text or JSON report.
struct BackupRun {
    var command: String
    var source: String
    var destination: String
    var verification: VerificationMode
    /// The key of the store (and of the backup, which has the store's key).
    var key: KeyOptions
    var common: CommonOptions

    /// Opens `source` without changing it (salvage recovery reads and never cuts or removes),
    /// refuses a damaged one, copies it, and prints the report. Throws a failure carrying the
    /// exit status.
    func run() throws {
        let src = StoreAccess.resolve(source)
        let dest = StoreAccess.resolve(destination)
        try StoreAccess.requireStore(src)
        let encryption = try StoreAccess.encryption(key, for: src)
        if dest == src || dest.hasPrefix(src + "/") || src.hasPrefix(dest + "/") {
            throw ToolFailure(.usage, "The destination \(dest) must be outside \(src), and \(src) outside it.", path: dest)
        }
        let engine = try StoreAccess.openEngine(src, options: StoreAccess.readOnlyOptions, encryption: encryption)
        defer { try? engine.close() }
        if let drop = engine.recoveryReport.dropped.first {
            throw ToolFailure(
                .damage,
                "\(src) is damaged (\(drop)); a \(command) copies a store whole. Run `logstore-compact verify` for details and `salvage` to recover its data.",
                path: src)
        }
        let progress = ProgressLine(common.progress)
        defer { progress.finish() }
        let report: BackupReport
        do {
            report = try engine.backup(to: dest, fileSystem: StoreAccess.fs, verification: verification.verification) { p in
                switch p.phase {
                case .copying: progress.update("copying", done: p.bytesDone, total: p.bytesTotal)
                case .verifying: progress.phase("verifying")
                case .done: break
                }
            }
        } catch let e as LogStoreError where e.code == .locked {
            throw ToolFailure(
                .locked, "The destination \(dest) is open elsewhere (its LOCK is held). Close what has it open and run the command again.",
                path: dest)
        }
        progress.finish()
        let seconds = Double(report.duration.components.seconds) + Double(report.duration.components.attoseconds) / 1e18
        if common.json {
            Console.out(
                JSON.object([
                    ("command", .string(command)),
                    ("store", .string(src)),
                    ("destination", .string(dest)),
                    ("ok", .bool(true)),
                    ("sequence", .uint(report.sequence)),
                    ("records", .integer(report.records)),
                    ("segments", .integer(report.segments)),
                    ("segmentsCopied", .integer(report.segmentsCopied)),
                    ("segmentsReused", .integer(report.segmentsReused)),
                    ("bytesCopied", .uint(report.bytesCopied)),
                    ("bytes", .uint(report.bytes)),
                    ("verification", .string(verification.rawValue)),
                    ("seconds", .double(seconds)),
                ]).rendered)
        } else {
            Console.out("\(command) \(src) -> \(dest)")
            Console.out(
                "  \(Format.count(report.records)) records through transaction \(report.sequence), \(report.segments) segment\(report.segments == 1 ? "" : "s"), \(Format.bytes(report.bytes))"
            )
            let rate = seconds > 0 && report.bytesCopied > 0 ? " (\(Format.bytes(UInt64(Double(report.bytesCopied) / seconds)))/s)" : ""
            Console.out(
                "  copied \(report.segmentsCopied) segment\(report.segmentsCopied == 1 ? "" : "s"), \(Format.bytes(report.bytesCopied)) in \(Format.fixed(seconds, 2)) s\(rate); reused \(report.segmentsReused) already there"
            )
            let how: String
            switch verification {
            case .readBack: how = "every byte written read back and compared"
            case .open: how = "read back, opened and compared record by record"
            case .replay: how = "read back, every frame replayed and compared"
            }
            Console.out("OK: verified (\(how))")
        }
    }
}
