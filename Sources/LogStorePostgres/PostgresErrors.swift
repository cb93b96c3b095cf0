import Foundation
public import LogStoreEngine
import PostgresNIO

/// The error codes of the PostgreSQL backend. Their raw values are stable (they appear in logs and
/// in the CLI's `--json` output).
extension LogStoreError.Code {
    /// The database server could not be reached, refused the connection, or the connection broke
    /// (a restart, a failover, a network partition). Nothing half-written is visible: a transaction
    /// the server did not acknowledge was rolled back, except for ``commitOutcomeUnknown``.
    /// Retry once the server is back.
    public static let serverUnavailable = LogStoreError.Code("serverUnavailable")
    /// The connection broke while the server was committing a write: it may or may not have
    /// committed. Read the items back before writing them again (writes of whole items are
    /// idempotent; increments are not).
    public static let commitOutcomeUnknown = LogStoreError.Code("commitOutcomeUnknown")
    /// A write kept conflicting with concurrent writes (SQLSTATE 40001 or 40P01) for longer than
    /// `PostgresDataStore.Configuration.retry` allows. Nothing was committed; retry later, or make
    /// writers touch fewer shared items.
    public static let writeConflict = LogStoreError.Code("writeConflict")
    /// The server cancelled a statement: it ran longer than
    /// `PostgresDataStore.Configuration.statementTimeout` (waiting for a lock another session
    /// holds, or a query over too many rows), or an administrator cancelled it. Nothing of the
    /// transaction was committed; the connection stays usable.
    public static let statementTimeout = LogStoreError.Code("statementTimeout")
}

/// PostgreSQL's and postgres-nio's failures as LogStore's typed errors (Docs/SQLBackends.md,
/// "PostgreSQL", failure table): the code says what happened, the message what to do, the
/// postgres-nio error is the cause.
enum PostgresErrors {
    /// The SQLSTATE of a server error, if `error` is one.
    static func sqlState(_ error: any Error) -> String? {
        (error as? PSQLError)?.serverInfo?[.sqlState]
    }

    /// Whether `error` is a serialization failure or a deadlock, after which the transaction can
    /// simply be run again.
    static func isRetryable(_ error: any Error) -> Bool {
        if let e = error as? LogStoreError, let cause = e.underlyingError { return isRetryable(cause) }
        let state = sqlState(error)
        return state == "40001" || state == "40P01"
    }

    /// The server's message, or postgres-nio's description of a client-side failure.
    static func message(_ error: PSQLError) -> String {
        if let info = error.serverInfo {
            // The server's detail is left out: it can quote the row's values (a unique
            // violation names the key), and messages never carry user values.
            var m = info[.message] ?? "server error"
            if let state = info[.sqlState] { m += " (SQLSTATE \(state))" }
            return m
        }
        if let underlying = error.underlying { return "\(error.code): \(underlying)" }
        return "\(error.code)"
    }

    /// `error` (anything postgres-nio or NIO threw) as a `LogStoreError` for the database
    /// `place` (a URL without its password). `duringCommit`: the error came from `COMMIT`, so a
    /// broken connection leaves the outcome unknown. A `LogStoreError` passes through unchanged.
    static func map(_ error: any Error, place: String, duringCommit: Bool = false) -> LogStoreError {
        if let e = error as? LogStoreError { return e }
        guard let e = error as? PSQLError else {
            if error is ChannelError || error is IOError || error is NIOConnectionError {
                return unavailable(place: place, cause: "\(error)", error: error, duringCommit: duringCommit)
            }
            return LogStoreError(.io, "The PostgreSQL store failed: \(error).", path: place, underlying: error)
        }
        guard let state = e.serverInfo?[.sqlState] else {
            switch e.code {
            case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed:
                // A connection closed because the server said it ends the session (57P01..03,
                // e.g. pg_terminate_backend before the statement arrived): nothing committed.
                if let cause = e.underlying as? PSQLError, let state = cause.serverInfo?[.sqlState], state.hasPrefix("57P") {
                    return unavailable(place: place, cause: message(cause), error: e, duringCommit: false)
                }
                return unavailable(place: place, cause: message(e), error: e, duringCommit: duringCommit)
            case .sslUnsupported, .failedToAddSSLHandler, .receivedUnencryptedDataAfterSSLRequest:
                return LogStoreError(
                    .serverUnavailable,
                    "The PostgreSQL server does not offer TLS, which the configuration requires (\(message(e))). Enable ssl on the server, or connect with sslmode=prefer or disable on a trusted network.",
                    path: place, underlying: e)
            case .unsupportedAuthMechanism, .authMechanismRequiresPassword, .saslError:
                return LogStoreError(
                    .permissionDenied,
                    "PostgreSQL refused to authenticate the user (\(message(e))). Check the user name and password in the URL.",
                    path: place, underlying: e)
            default:
                return LogStoreError(.io, "The PostgreSQL connection failed (\(message(e))).", path: place, underlying: e)
            }
        }
        let text = message(e)
        switch state {
        case "40001", "40P01":
            return LogStoreError(
                .writeConflict, "The transaction conflicted with a concurrent one (\(text)). Nothing was committed; run it again.",
                path: place, underlying: e)
        case "23505":
            return LogStoreError(
                .uniqueConstraintViolation,
                "A write would give two items equal values in every column of a unique index (\(text)). The write block was rolled back; change or delete the other item first.",
                path: place, underlying: e)
        case "53100":
            return LogStoreError(
                .diskFull,
                "The database server's disk is full (\(text)). The transaction was rolled back; nothing committed was lost. Free space on the server and retry.",
                path: place, underlying: e)
        case "53200", "53300", "53400":
            return LogStoreError(
                .serverUnavailable,
                "The database server is out of memory or connections (\(text)). Lower maximumConnections of the stores that share it, or raise the server's max_connections.",
                path: place, underlying: e)
        case "28000", "28P01":
            return LogStoreError(
                .permissionDenied,
                "PostgreSQL refused the login (\(text)). Check the user name and password in the URL and the server's pg_hba.conf.",
                path: place, underlying: e)
        case "42501":
            return LogStoreError(
                .permissionDenied,
                "The database user may not do this (\(text)). Grant it CREATE and USAGE on the store's schema, and rights on its tables.",
                path: place, underlying: e)
        case "25006":
            return LogStoreError(
                .permissionDenied, "The server accepts no writes (\(text)): it is a standby or in read-only mode. Connect to the primary.",
                path: place, underlying: e)
        case "3D000":
            return LogStoreError(
                .notAStore, "The database does not exist (\(text)). Create it (createdb, CREATE DATABASE) or correct the URL.", path: place,
                underlying: e)
        case "57014":
            return LogStoreError(
                .statementTimeout,
                "The server cancelled a statement (\(text)): it ran longer than the store's statement timeout, or an administrator cancelled it. Nothing of the transaction was committed; retry, or look for the long transaction holding a lock.",
                path: place, underlying: e)
        case "55P03":
            return LogStoreError(
                .locked,
                "A lock the statement needs is held by another session (\(text)). Retry once the other session's long transaction or schema change is done.",
                path: place, underlying: e)
        case "54000":
            return LogStoreError(.itemTooLarge, "An item exceeds a PostgreSQL limit (\(text)).", path: place, underlying: e)
        case "22P05", "22021":
            return LogStoreError(
                .invalidArgument,
                "PostgreSQL cannot store a value of this item (\(text)): its text columns cannot hold NUL characters or invalid UTF-8.",
                path: place, underlying: e)
        default:
            if state.hasPrefix("57P") {
                // The server ended the session (shutdown, restart, pg_terminate_backend) and said
                // so in its answer to the statement: the transaction did not commit.
                return unavailable(place: place, cause: text, error: e, duringCommit: false)
            }
            if state.hasPrefix("08") {
                return unavailable(place: place, cause: text, error: e, duringCommit: duringCommit)
            }
            return LogStoreError(.io, "PostgreSQL failed (\(text)).", path: place, underlying: e)
        }
    }

    static func unavailable(place: String, cause: String, error: any Error, duringCommit: Bool) -> LogStoreError {
        if duringCommit {
            return LogStoreError(
                .commitOutcomeUnknown,
                "The connection to PostgreSQL broke while the server was committing (\(cause)): the write may or may not have committed. Read the items back before writing them again.",
                path: place, underlying: error)
        }
        return LogStoreError(
            .serverUnavailable,
            "PostgreSQL cannot be reached or the connection broke (\(cause)). Nothing of the current transaction was committed. Retry once the server is reachable.",
            path: place, underlying: error)
    }
}
