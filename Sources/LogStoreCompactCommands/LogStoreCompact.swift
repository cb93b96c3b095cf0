public import ArgumentParser
@_exported public import LogStoreCommandSupport
import LogStoreEngine

/// The `logstore-compact` maintenance tool: root command. With a store path and no subcommand it
/// runs ``CompactCommand`` (`logstore-compact <store>`), like bbolt's tools.
///
/// Run it through ``LogStoreCompactCLI/main(_:console:)``, which maps errors to the documented
/// exit codes (Docs/CLI.md).
public struct LogStoreCompact: ParsableCommand {
    /// Name, help text (with the exit codes) and subcommands.
    public static let configuration = CommandConfiguration(
        commandName: "logstore-compact",
        abstract: "Inspect, verify, compact, salvage, back up and restore LogStore stores.",
        discussion: """
            Every command takes the store's lock first, so it refuses a store that an app has \
            open (exit 3). Results go to stdout, diagnostics and progress to stderr; --json \
            prints one JSON document (dump: one JSON object per line). See Docs/CLI.md.

            \(exitCodesHelp)
            """,
        subcommands: [
            CompactCommand.self, StatsCommand.self, VerifyCommand.self, DumpCommand.self, SalvageCommand.self, MigrationsCommand.self,
            BackupCommand.self, RestoreCommand.self, RekeyCommand.self,
        ],
        defaultSubcommand: CompactCommand.self)

    /// Creates the root command (ArgumentParser calls this).
    public init() {}
}

/// The tool's entry point, shared by the `logstore-compact` binary and in-process tests.
public enum LogStoreCompactCLI {
    /// Parses `arguments` (without the program name), runs the command with its output going to
    /// `console`, and returns the exit status (``ToolExitCode``). Never throws and never exits the
    /// process. Runs on the calling thread.
    public static func main(_ arguments: [String], console: (any ConsoleSink)? = nil) -> Int32 {
        ToolRunner.main(LogStoreCompact.self, toolName: "logstore-compact", arguments, console: console)
    }

    /// Runs `body` with the tool's output going to `console` (for calling a parsed command's
    /// `run()` directly). Runs `body` on the calling thread.
    public static func withConsole<R>(_ console: any ConsoleSink, _ body: () throws -> R) rethrows -> R {
        try ToolRunner.withConsole(console, body)
    }
}

/// The text of `--help`'s exit code section (also in Docs/CLI.md).
let exitCodesHelp = """
    EXIT CODES
      0  ok: done, nothing wrong found
      1  damage: verify found damage, salvage dropped data, store damaged
      2  usage: bad arguments or target (e.g. a non-empty --into directory)
      3  locked: the store is open elsewhere (its LOCK is held)
      4  not a store: missing, not a LogStore store, or a newer format
      5  I/O error: a system call failed (disk full, permission denied)
      6  unavailable: not in this build (in-place compaction, pending)
    """
