public import ArgumentParser
import LogStoreEngine

/// `logstore-compact restore <backup> <target>`: a backup copied into a new store directory,
/// checked by replaying every frame. (Opening the backup itself is a restore too; this leaves
/// the backup as it is.)
public struct RestoreCommand: ParsableCommand {
    /// Name and help.
    public static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Copy a backup into a new store directory, verified.",
        discussion: """
            A backup is a store: an app can open it as it is. restore copies it into a new or \
            empty directory instead, so the backup stays untouched for the next disaster, and \
            verifies the copy by replaying its whole log (--verify open or read-back check less). \
            A backup whose writing was interrupted does not open and is refused (exit 1 or 4); \
            restore from an earlier one. The target never holds a half copy that opens.

            \(exitCodesHelp)
            """)

    /// The backup directory.
    @Argument(help: "The backup directory (only read).")
    public var backup: String

    /// The new store directory.
    @Argument(help: "The directory of the restored store: new or empty.")
    public var target: String

    /// Verification mode.
    @Option(name: .long, help: "replay (default: replay every frame of the copy), open or read-back.")
    public var verify: VerificationMode = .replay

    /// `--key-file`, `--key-env`: the key of an encrypted store.
    @OptionGroup public var key: KeyOptions

    /// `--json`, `--progress`.
    @OptionGroup public var common: CommonOptions

    /// Creates the command (ArgumentParser calls this).
    public init() {}

    /// Restores and prints the report. Runs on the calling thread. Throws a failure carrying the
    /// exit status (an incomplete or damaged backup, locked, a non-empty target, I/O).
    public func run() throws {
        let source = StoreAccess.resolve(backup)
        try StoreAccess.requireStore(source)
        let names = try StoreAccess.fs.contentsOfDirectory(atPath: source)
        if names.contains(LogEngine.backupMarkerFileName) && !names.contains(LogStoreFormat.manifestFileName) {
            throw ToolFailure(
                .damage,
                "\(source) is an unfinished backup (its writing was interrupted): it holds no MANIFEST. Restore from an earlier backup, or back up again.",
                path: source)
        }
        let dest = StoreAccess.resolve(target)
        if let existing = try? StoreAccess.fs.contentsOfDirectory(atPath: dest), !existing.isEmpty {
            throw ToolFailure(
                .usage, "The target \(dest) is not empty. Restore into a new or empty directory; a restore never writes over files.",
                path: dest)
        }
        try BackupRun(command: "restore", source: backup, destination: target, verification: verify, key: key, common: common).run()
    }
}
