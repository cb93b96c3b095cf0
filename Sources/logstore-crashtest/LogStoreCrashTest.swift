import ArgumentParser

/// The `logstore-crashtest` command: a kill -9 driver (default), its worker, and the in-process
/// simulated power-loss harnesses.
struct LogStoreCrashTest: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logstore-crashtest",
        abstract: "Crash-recovery tests for LogStore: kill -9 of real processes, and simulated power losses.",
        discussion: "Every run prints its seed; rerun with --seed to reproduce (Docs/Testing.md, \"Crash recovery\").",
        subcommands: [Kill.self, GroupCommitKill.self, PowerLoss.self, MigrateKill.self, Worker.self, GroupCommitWorker.self],
        defaultSubcommand: Kill.self)
}
