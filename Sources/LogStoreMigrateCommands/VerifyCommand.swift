import ArgumentParser
import Foundation
import LogStore
import LogStoreCommandSupport

/// `logstore-migrate verify SRC DEST` (also `logstore-migrate SRC DEST --verify-only`): compares
/// the two stores type by type and names every missing, extra and different item.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Compare DEST with SRC: counts, digests and every item; exit 1 if they differ.",
        discussion: """
            Each store is read from one snapshot. Per item type: the number of items on each side, \
            an order-independent digest of each side's items (SipHash of each item's canonical \
            encoding, summed), and the ids of items missing from DEST, extra in DEST, and \
            different. Types only DEST has are compared too (all their items are extra).
            """)

    @OptionGroup var stores: StorePair
    @OptionGroup var common: CommonOptions

    func run() throws { try Self.verify(stores, common) }

    static func verify(_ stores: StorePair, _ common: CommonOptions) throws {
        let (source, from, destination, to) = try stores.open(createDestination: false)
        defer {
            try? from.tearDown()
            try? to.tearDown()
        }
        let line = ProgressLine(common.progress)
        var migrator = BackendMigrator(from: from, to: to)
        migrator.types = stores.typeList
        migrator.progress = MigrationOutput.progressHandler(line)
        let pending = try migrator.pendingCopy()
        let verification = try migrator.verify()
        line.finish()
        if common.json {
            var members: [(String, JSON)] = [("source", .string(source.description)), ("destination", .string(destination.description))]
            members.append(("interruptedCopy", .bool(pending.map { !$0.isComplete } ?? false)))
            members.append(("verification", MigrationOutput.json(verification)))
            Console.out(JSON.object(members).rendered)
        } else {
            if let pending, !pending.isComplete {
                Console.out(
                    "note: the destination holds an interrupted copy (\(Format.count(pending.copied)) items so far); finish it with `logstore-migrate --resume`"
                )
            }
            for l in MigrationOutput.lines(verification) { Console.out(l) }
        }
        if !verification.isEqual {
            // The report is printed (one JSON document with --json): only the exit status is left.
            if !common.json { Console.err("logstore-migrate: the destination differs from the source; keep using the source") }
            throw ExitCode(ToolExitCode.damage.rawValue)
        }
    }
}
