public import ArgumentParser
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
            BackupCommand.self, RestoreCommand.self,
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
        let sink = console ?? StandardConsole()
        defer { sink.flush() }
        return Console.$current.withValue(sink) {
            let json = arguments.contains("--json")
            do {
                var command = try LogStoreCompact.parseAsRoot(arguments)
                try command.run()
                return ToolExitCode.ok.rawValue
            } catch let failure as ToolFailure {
                return report(failure, json: json)
            } catch let e as LogStoreError {
                return report(ToolFailure(ToolExitCode.forError(e), e.description, path: e.path), json: json)
            } catch let code as ExitCode {
                return code.rawValue
            } catch {
                let code = LogStoreCompact.exitCode(for: error)
                let message = LogStoreCompact.fullMessage(for: error)
                if code == .success {
                    // --help, --version: the requested text on stdout.
                    if !message.isEmpty { Console.out(message) }
                    return ToolExitCode.ok.rawValue
                }
                if code == .validationFailure {
                    return report(ToolFailure(.usage, message), json: json, prefix: false)
                }
                return report(ToolFailure(.io, message), json: json)
            }
        }
    }

    /// Runs `body` with the tool's output going to `console` (for calling a parsed command's
    /// `run()` directly). Runs `body` on the calling thread.
    public static func withConsole<R>(_ console: any ConsoleSink, _ body: () throws -> R) rethrows -> R {
        try Console.$current.withValue(console, operation: body)
    }

    static func report(_ failure: ToolFailure, json: Bool, prefix: Bool = true) -> Int32 {
        Console.err(prefix ? "logstore-compact: error: \(failure.message)" : failure.message)
        if json {
            Console.out(JSON.object([
                ("error", .object([
                    ("code", .string(failure.code.name)),
                    ("exitCode", .integer(failure.code.rawValue)),
                    ("message", .string(failure.message)),
                    ("path", failure.path.map { .string($0) } ?? .null),
                ]))
            ]).rendered)
        }
        return failure.code.rawValue
    }
}
