import Foundation
public import LogStore
import LogStoreCommandSupport
import LogStoreEncryption
import LogStoreSQLite
import Synchronization

/// A store named on the command line: a LogStore directory, a SQLite file or a PostgreSQL URL.
///
///     logstore:<directory>    a LogStore store (a directory; created if missing)
///     sqlite:<file>           a SQLite store (a file; created if missing)
///     postgres://...          a PostgreSQL store (postgresql:// too; its schema created if missing;
///                             needs a build whose executable registered PostgreSQL support)
///     <path>                  an existing directory: LogStore; an existing file, or a path ending
///                             in .sqlite, .sqlite3 or .db: SQLite; anything else: LogStore
struct StoreLocation: CustomStringConvertible {
    enum Kind: String {
        case logStore = "logstore"
        case sqlite
        case postgres
    }

    let kind: Kind
    let path: String

    /// Parses `argument`. Throws a usage failure for an empty path.
    init(_ argument: String) throws {
        if argument.hasPrefix("postgres://") || argument.hasPrefix("postgresql://") {
            kind = .postgres
            path = argument
        } else if argument.hasPrefix("sqlite:") {
            kind = .sqlite
            path = String(argument.dropFirst("sqlite:".count))
        } else if argument.hasPrefix("logstore:") {
            kind = .logStore
            path = String(argument.dropFirst("logstore:".count))
        } else {
            path = argument
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory)
            let ext = (argument as NSString).pathExtension.lowercased()
            if exists {
                kind = isDirectory.boolValue ? .logStore : .sqlite
            } else {
                kind = ["sqlite", "sqlite3", "db"].contains(ext) ? .sqlite : .logStore
            }
        }
        guard !path.isEmpty else {
            throw ToolFailure(
                .usage, "A store path is empty: give a LogStore directory or a SQLite file (optionally prefixed logstore: or sqlite:).")
        }
    }

    /// `sqlite:/data/app.sqlite`; a PostgreSQL URL without its password.
    var description: String {
        guard kind == .postgres else { return "\(kind.rawValue):\(path)" }
        guard var c = URLComponents(string: path), c.password != nil else { return path }
        c.password = "***"
        return c.string ?? path
    }

    /// Opens the store (`setup()`: takes its lock, creates it if missing when `create`), a LogStore
    /// store with `encryption` (its key). Throws a not-a-store failure for a missing source, a usage
    /// failure for a key given to a SQLite or PostgreSQL store, and the store's `LogStoreError`s
    /// (`.wrongKey`, `.notEncrypted` among them).
    func open(create: Bool, encryption: StoreEncryption = .none) throws -> any DataStore {
        if encryption.isEnabled && kind != .logStore {
            throw ToolFailure(
                .usage,
                "A key applies only to a LogStore store; \(self) is a \(kind == .sqlite ? "SQLite" : "PostgreSQL") store, which LogStore does not encrypt."
            )
        }
        if kind == .postgres {
            guard let opener = StoreOpeners.postgres else {
                throw ToolFailure(
                    .unavailable,
                    "This logstore-migrate was built without PostgreSQL support; build the package's logstore-migrate product (it links LogStorePostgres)."
                )
            }
            return try opener(path, create)
        }
        if !create && !FileManager.default.fileExists(atPath: path) {
            throw ToolFailure(.notAStore, "There is no store at \(path).", path: path)
        }
        let store: any DataStore
        switch kind {
        case .logStore:
            var options = LogStoreOptions()
            options.encryption = encryption
            store = LogDataStore(directory: URL(fileURLWithPath: path), options: options)
        case .sqlite: store = SQLiteDataStore(path: path)
        case .postgres: throw ToolFailure(.unavailable, "PostgreSQL stores open through StoreOpeners.")
        }
        try store.setup()
        return store
    }
}

/// How `logstore-migrate` opens the kinds of store its commands' module does not link: the
/// executable registers them before it runs (PostgreSQL, through LogStorePostgres, so that this
/// module never builds NIO). Thread-safe.
public enum StoreOpeners {
    /// Opens (`setup()`) the PostgreSQL store at a URL; the flag says whether to create it when
    /// the URL's schema holds none. Throws the store's errors.
    public typealias Opener = @Sendable (_ url: String, _ create: Bool) throws -> any DataStore

    static let registered = Mutex<Opener?>(nil)

    /// The PostgreSQL opener, if the executable registered one.
    public static var postgres: Opener? {
        get { registered.withLock { $0 } }
        set { registered.withLock { $0 = newValue } }
    }
}
