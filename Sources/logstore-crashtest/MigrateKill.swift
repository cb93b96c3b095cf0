import ArgumentParser
import Foundation
import _LogStoreTestSupport

/// `logstore-crashtest migrate-kill`: kill -9 of `logstore-migrate` copies at random moments,
/// LogStore -> SQLite -> LogStore, each resumed until done and verified equal
/// (``MigrationKillDriver``). Build `logstore-migrate` first (it runs the binary next to this one).
struct MigrateKill: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate-kill",
        abstract: "Kill logstore-migrate copies with SIGKILL at random moments; every copy must resume to a verified-equal destination.",
        discussion: """
            Seeds a LogStore store with three item types, copies it to SQLite and back with the \
            real logstore-migrate binary (copy --resume), sends SIGKILL to the copying process at \
            a random moment of each cycle, and after the cycles lets the copies finish and runs \
            logstore-migrate verify on each leg and on the round trip: all must be equal. Build \
            the tool first: swift build --product logstore-migrate (same configuration).
            """)

    @Option(help: "SIGKILLs to send (half on each leg).")
    var cycles = 200

    @Option(help: "Items of each of the three item types in the source.")
    var items = 20_000

    @Option(help: "Items per copy transaction (smaller: more commits to land in).")
    var batchSize = 100

    @Option(help: "The run's seed (default: random; printed).")
    var seed: UInt64?

    @Option(help: "The logstore-migrate binary (default: next to this one).")
    var migrateBinary: String?

    @Flag(help: "Print one line per kill.")
    var verbose = false

    func run() throws {
        let seed = seed ?? UInt64.random(in: 0...UInt64.max)
        let binary =
            migrateBinary
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("logstore-migrate").path
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw ValidationError(
                "No logstore-migrate at \(binary): build it (swift build --product logstore-migrate) or pass --migrate-binary.")
        }
        let root = FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        let base = (root as NSString).appendingPathComponent("logstore-migrate-kill-\(getpid())-\(seed)")
        print("logstore-crashtest migrate-kill: seed \(seed), \(cycles) kills, \(items) items x 3 types, work directory \(base)")
        let started = Date()
        let driver = MigrationKillDriver(
            binary: binary, base: base, seed: seed, itemsPerType: items, batchSize: batchSize, verbose: verbose)
        do {
            try driver.run(cycles: cycles)
        } catch {
            print("FAILED (seed \(seed)): \(error)")
            print("The stores are kept for inspection: \(base)")
            throw ExitCode(1)
        }
        print(driver.summary + " in \(Int(Date().timeIntervalSince(started))) s")
        try? FileManager.default.removeItem(atPath: base)
    }
}
