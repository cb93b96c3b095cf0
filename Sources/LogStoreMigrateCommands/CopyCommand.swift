import ArgumentParser
import Foundation
import LogStore
import LogStoreCommandSupport

/// `logstore-migrate [copy] SRC DEST`: copies every item (or `--types`) from SRC to DEST in
/// batches, resumable (`--resume`) after an interruption, then verifies DEST against SRC.
struct CopyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "copy",
        abstract: "Copy every item from SRC to DEST, then verify (the default command).",
        discussion: """
            Items are copied in batches from one snapshot of SRC, each batch one transaction of \
            DEST together with a cursor, so an interruption (Ctrl-C, kill -9, power loss) never \
            loses a batch: rerun with --resume to continue. DEST must be empty (or hold an \
            interrupted copy, with --resume). Then both stores are compared type by type \
            (counts, digests, every item); exit 1 if they differ.
            """)

    @OptionGroup var stores: StorePair

    @Flag(help: "Continue an interrupted copy from the cursor kept in DEST (starts a new copy if there is none).")
    var resume = false

    @Flag(help: "Only compare DEST with SRC (as `logstore-migrate verify`); copy nothing.")
    var verifyOnly = false

    @Flag(help: "Copy without verifying afterwards.")
    var noVerify = false

    @Option(help: "Items per destination transaction.")
    var batchSize = 2_000

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard batchSize > 0 else { throw ValidationError("--batch-size must be at least 1.") }
        guard !(verifyOnly && (resume || noVerify)) else {
            throw ValidationError("--verify-only copies nothing: it takes neither --resume nor --no-verify.")
        }
    }

    func run() throws {
        if verifyOnly {
            try VerifyCommand.verify(stores, common)
            return
        }
        let (source, from, destination, to) = try stores.open(createDestination: true)
        defer {
            try? from.tearDown()
            try? to.tearDown()
        }
        let line = ProgressLine(common.progress)
        var migrator = BackendMigrator(from: from, to: to)
        migrator.types = stores.typeList
        migrator.batchSize = batchSize
        migrator.sourceDescription = source.description
        migrator.progress = MigrationOutput.progressHandler(line)
        let copy: BackendMigrationCopyReport
        do {
            copy = try migrator.copy(resume: resume)
        } catch let e as LogStoreError where e.code == .invalidArgument {
            line.finish()
            throw ToolFailure(.usage, e.message, path: destination.path)
        }
        line.finish()
        var verification: BackendMigrationVerification? = nil
        if !noVerify {
            verification = try migrator.verify()
            line.finish()
        }
        // The cursor goes once the copy is verified (or when not verifying, at once).
        if verification?.isEqual ?? true { try migrator.finish() }
        if common.json {
            var members: [(String, JSON)] = [
                ("source", .string(source.description)), ("destination", .string(destination.description)),
                ("copy", MigrationOutput.json(copy)),
            ]
            if let verification { members.append(("verification", MigrationOutput.json(verification))) }
            Console.out(JSON.object(members).rendered)
        } else {
            let rate =
                MigrationOutput.secondsValue(copy.duration) > 0
                ? Double(copy.itemsThisRun) / MigrationOutput.secondsValue(copy.duration) : 0
            Console.out(
                "\(copy.resumed ? "resumed and copied" : "copied") \(Format.count(copy.types.count)) type(s), \(Format.count(copy.items)) items (\(Format.bytes(UInt64(copy.bytes)))) from \(source) to \(destination)"
            )
            Console.out(
                "this run: \(Format.count(copy.itemsThisRun)) items in \(MigrationOutput.seconds(copy.duration)) (\(Format.count(Int(rate))) items/s)"
            )
            if let verification { for l in MigrationOutput.lines(verification) { Console.out(l) } }
        }
        if let verification, !verification.isEqual {
            // The report is printed (one JSON document with --json): only the exit status is left.
            if !common.json {
                Console.err(
                    "logstore-migrate: the destination differs from the source; keep using the source, delete the destination and copy again"
                )
            }
            throw ExitCode(ToolExitCode.damage.rawValue)
        }
    }
}
