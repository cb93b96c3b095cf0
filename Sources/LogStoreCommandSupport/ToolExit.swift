package import LogStoreEngine

/// The exit statuses of LogStore's command-line tools, `logstore-compact` and `logstore-migrate`
/// (Docs/CLI.md, "Exit codes"). Stable: scripts test them.
public enum ToolExitCode: Int32, Sendable, CaseIterable {
    /// The command did what was asked and found nothing wrong.
    case ok = 0
    /// The store is damaged (`verify` found damage, `salvage` had to drop data, or another command
    /// met corruption; its output so far is still printed), or a migration's verification found
    /// the destination different from the source.
    case damage = 1
    /// The command line or a target is wrong (unknown option, non-empty `--into` directory, a
    /// missing or wrong key for an encrypted store, a key for a store that is not encrypted...).
    case usage = 2
    /// Another process (or another store object) has the store open: its lock is held.
    case locked = 3
    /// The path is missing, is not a LogStore store, or was written by a newer format version.
    case notAStore = 4
    /// A system call failed: I/O error, disk full, permission denied.
    case io = 5
    /// The operation is not available in this build (in-place compaction until the engine has it).
    case unavailable = 6

    /// A stable lowercase name, used as `error.code` in `--json` output.
    public var name: String {
        switch self {
        case .ok: "ok"
        case .damage: "damage"
        case .usage: "usage"
        case .locked: "locked"
        case .notAStore: "notAStore"
        case .io: "io"
        case .unavailable: "unavailable"
        }
    }

    /// The exit status for a `LogStoreError`.
    package static func forError(_ e: LogStoreError) -> ToolExitCode {
        switch e.code {
        case .locked: .locked
        case .notAStore, .unsupportedFormatVersion: .notAStore
        case .corruption: .damage
        case .invalidArgument, .itemTooLarge, .keyTooLarge: .usage
        case .wrongKey, .notEncrypted: .usage  // the key given (or missing) is an argument
        case LogStoreError.Code("unsupported"): .unavailable  // LogStore's code (the DataStore layer's, not the engine's)
        case .io, .diskFull, .permissionDenied, .storePoisoned: .io
        default: .io
        }
    }
}

/// A failure the tool reports itself: an exit status and a message that says what to do.
package struct ToolFailure: Error, CustomStringConvertible {
    package var code: ToolExitCode
    package var message: String
    package var path: String?

    package init(_ code: ToolExitCode, _ message: String, path: String? = nil) {
        self.code = code
        self.message = message
        self.path = path
    }

    package var description: String { message }
}
