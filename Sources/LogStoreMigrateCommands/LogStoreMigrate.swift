public import ArgumentParser
import LogStore
@_exported public import LogStoreCommandSupport

/// The `logstore-migrate` tool: root command. With two stores and no subcommand it runs
/// ``CopyCommand`` (`logstore-migrate SRC DEST`).
///
/// Run it through ``LogStoreMigrateCLI/main(_:console:)``, which maps errors to the documented exit
/// codes (Docs/CLI.md).
public struct LogStoreMigrate: ParsableCommand {
    /// Name, help text (with the exit codes) and subcommands.
    public static let configuration = CommandConfiguration(
        commandName: "logstore-migrate",
        abstract: "Copy a store between LogStore, SQLite and PostgreSQL, verified, resumable.",
        discussion: """
            A store is a LogStore directory, a SQLite file (.sqlite, .sqlite3, .db, or any \
            existing file), or a PostgreSQL URL (postgres://user:password@host/db?schema=s); \
            prefix a path with logstore: or sqlite: to say which. Both stores are opened, so the \
            locks of file stores are taken: stop the app first (exit 3 otherwise); a PostgreSQL \
            store has no lock: stop the app servers that write to it. Results go \
            to stdout, progress to stderr; --json prints one JSON document. See Docs/CLI.md and \
            the "Choosing and Switching Backends" article.

            \(migrateExitCodesHelp)
            """,
        subcommands: [CopyCommand.self, VerifyCommand.self, TypesCommand.self],
        defaultSubcommand: CopyCommand.self)

    /// Creates the root command (ArgumentParser calls this).
    public init() {}
}

/// The tool's entry point, shared by the `logstore-migrate` binary and in-process tests.
public enum LogStoreMigrateCLI {
    /// Parses `arguments` (without the program name), runs the command with its output going to
    /// `console` (the process's streams when nil), and returns the exit status
    /// (``ToolExitCode``). Never throws and never exits the process. Runs on the calling thread.
    public static func main(_ arguments: [String], console: (any ConsoleSink)? = nil) -> Int32 {
        ToolRunner.main(LogStoreMigrate.self, toolName: "logstore-migrate", arguments, console: console)
    }
}

/// The text of `--help`'s exit code section (also in Docs/CLI.md).
let migrateExitCodesHelp = """
    EXIT CODES
      0  ok: copied and verified equal (verify: equal)
      1  different: verification found missing, extra or different items
      2  usage: bad arguments, a destination that is not empty, an interrupted copy without --resume
      3  locked: a store is open elsewhere (an app has it)
      4  not a store: a missing source, not a store, another application's database, a newer format
      5  I/O error: a system call failed (disk full, permission denied)
      6  unavailable: a store cannot list its types or records (name the types with --types)
    """

/// Options every subcommand that reads two stores takes.
struct StorePair: ParsableArguments {
    @Argument(help: "The store to copy from (a LogStore directory, a SQLite file or a PostgreSQL URL).")
    var source: String

    @Argument(help: "The store to copy to (created if missing).")
    var destination: String

    @Option(help: "Only these item types, comma-separated (default: every type the source lists).")
    var types: String?

    @OptionGroup var keys: MigrationKeyOptions

    /// Parses and opens both stores (`setup()`: their locks are taken); the destination is
    /// created when `createDestination`. The caller tears them down.
    func open(createDestination: Bool) throws -> (source: StoreLocation, from: any DataStore, destination: StoreLocation, to: any DataStore)
    {
        let source = try StoreLocation(self.source)
        let destination = try StoreLocation(self.destination)
        let destinationEncryption = try keys.destinationEncryption()
        let from = try source.open(create: false, encryption: try keys.sourceEncryption())
        do {
            return (source, from, destination, try destination.open(create: createDestination, encryption: destinationEncryption))
        } catch {
            try? from.tearDown()
            throw error
        }
    }

    /// The item types given with `--types`, or nil.
    var typeList: [String]? {
        types.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
    }
}
