public import ArgumentParser
import LogStoreEngine

/// `logstore-compact backup <store> <destination>`: a verified copy of a closed store that is
/// itself a store. Into an earlier backup of the same store, only what it lacks is copied.
public struct BackupCommand: ParsableCommand {
    /// Name and help.
    public static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Copy a closed store into a verified backup (a store of its own).",
        discussion: """
            The store must be closed (backup takes its lock and exits 3 if an app has it open; \
            apps back up a live store with LogDataStore.backup(to:)). It is only read. The \
            destination must be missing, empty, or an earlier backup of the same store: then \
            only the segment files it lacks are copied (incremental). Sealed segments are copied \
            as they are, then MANIFEST and a checkpoint are written, everything is synced and \
            read back (--verify open also opens the backup and compares every record with the \
            store; --verify replay replays every frame). A crash or kill \
            never leaves a half backup that opens: an unfinished new backup refuses to open, an \
            earlier backup stays openable. Restore by opening the backup, or with `restore`.

            \(exitCodesHelp)
            """)

    /// The store directory.
    @Argument(help: "The store directory (only read).")
    public var store: String

    /// The backup directory.
    @Argument(help: "The backup directory: new, empty, or an earlier backup of this store.")
    public var destination: String

    /// Verification mode.
    @Option(
        name: .long,
        help:
            "read-back (compare every byte written with the store's), open (also open the backup and compare every record) or replay (also replay every frame)."
    )
    public var verify: VerificationMode = .readBack

    /// `--key-file`, `--key-env`: the key of an encrypted store.
    @OptionGroup public var key: KeyOptions

    /// `--json`, `--progress`.
    @OptionGroup public var common: CommonOptions

    /// Creates the command (ArgumentParser calls this).
    public init() {}

    /// Backs up and prints the report. Runs on the calling thread. Throws a failure carrying the
    /// exit status (not a store, locked, damaged, bad destination, I/O).
    public func run() throws {
        try BackupRun(command: "backup", source: store, destination: destination, verification: verify, key: key, common: common).run()
    }
}

/// `--verify` of `backup` and `restore`: a ``BackupVerification``.
public enum VerificationMode: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// ``BackupVerification/readBack``.
    case readBack = "read-back"
    /// ``BackupVerification/open``.
    case open
    /// ``BackupVerification/replay``.
    case replay

    var verification: BackupVerification {
        switch self {
        case .readBack: return .readBack
        case .open: return .open
        case .replay: return .replay
        }
    }
}
