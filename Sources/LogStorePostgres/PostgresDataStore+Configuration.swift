import Foundation
import LogStoreEngine
public import Logging
public import PostgresNIO

extension PostgresDataStore {
    /// Where the store's data lives and how the store talks to the server.
    ///
    /// ```swift
    /// var configuration = try PostgresDataStore.Configuration(url: "postgres://app:secret@db.internal:5432/app?sslmode=require")
    /// configuration.maximumConnections = 20
    /// let store = PostgresDataStore(configuration: configuration)
    /// ```
    ///
    /// A value; `Sendable`. Read when the store is set up (changing it later changes nothing).
    public struct Configuration: Sendable {
        /// The server, the user and the database, and TLS (postgres-nio's connection configuration).
        public var connection: PostgresConnection.Configuration
        /// The PostgreSQL schema that holds the store's tables (created if missing). A store owns
        /// its schema: several stores in one database need one schema each. Default `logstore`.
        public var schema: String = "logstore"
        /// The most connections the store keeps open at once (the pool). Child stores and
        /// observation snapshots hold a connection of their own while they live. Default 10.
        public var maximumConnections: Int = 10
        /// How long a caller waits for a free connection before `.serverUnavailable`. Default 30 s.
        public var leaseTimeout: Duration = .seconds(30)
        /// How long a statement may run: the server cancels it then (PostgreSQL's
        /// `statement_timeout`) and the call throws `.statementTimeout`, the transaction rolled
        /// back; when no answer comes 5 s later (a server or network that stopped answering), the
        /// connection is closed and the call throws `.serverUnavailable`. Default 5 min; a web
        /// service wants a few seconds (the "Scaling Out with PostgreSQL" article).
        public var statementTimeout: Duration = .seconds(300)
        /// How writes that conflict with concurrent writes are run again.
        public var retry = RetryPolicy()
        /// How often the store looks for commits of other servers while something observes it
        /// (observation never needs LISTEN/NOTIFY). Commits of this store reach its observers at
        /// once. Default 200 ms.
        public var pollInterval: Duration = .milliseconds(200)
        /// How long the commit log (`logstore_commits`, what observers of other servers read)
        /// keeps a commit. An observer that falls further behind re-reads its results. Default 1 hour.
        public var commitLogRetention: Duration = .seconds(3600)
        /// Whether `setup()` creates the store (its schema and tables) when the schema holds none.
        /// False for tools that must not create what they read (then `setup()` throws
        /// `.notAStore`). Default true.
        public var createIfMissing = true
        /// Where the store logs (connection events, retries, DDL). Default: label `LogStorePostgres`.
        public var logger = Logger(label: "LogStorePostgres")
        /// The NIO event loops the connections run on. Default: NIO's shared singleton group.
        public var eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton

        /// A configuration for the server and database of `connection`.
        public init(connection: PostgresConnection.Configuration, schema: String = "logstore") {
            self.connection = connection
            self.schema = schema
        }

        /// A configuration from a libpq-style URL:
        /// `postgres://user:password@host:port/database?sslmode=prefer&schema=logstore`.
        ///
        /// Query parameters: `sslmode` (`disable`; `prefer`, the default: TLS when the server
        /// offers it, unverified as libpq's `prefer`; `require`: TLS or fail, unverified;
        /// `verify-full`: TLS with the certificate checked against the system's roots and the
        /// host name), `schema`, `host` (a directory: a Unix socket in it, as libpq's),
        /// `max_connections`, `application_name`. The user defaults to `postgres`, the port to
        /// 5432, the database to the user's name. Throws `.invalidArgument` for a URL that is not
        /// one of these, or a TLS configuration NIOSSL refuses.
        public init(url: String) throws {
            guard let c = URLComponents(string: url), ["postgres", "postgresql"].contains(c.scheme?.lowercased() ?? "") else {
                throw LogStoreError(
                    .invalidArgument, "Not a PostgreSQL URL: \(Self.redacted(url)). Write postgres://user:password@host:port/database.")
            }
            var query: [String: String] = [:]
            for item in c.queryItems ?? [] { query[item.name] = item.value ?? "" }
            let user = c.user.flatMap { $0.removingPercentEncoding } ?? "postgres"
            let password = c.password.flatMap { $0.removingPercentEncoding }
            var database = String((c.path.removingPercentEncoding ?? c.path).drop { $0 == "/" })
            if database.isEmpty { database = user }
            let tls: PostgresConnection.Configuration.TLS
            switch query["sslmode"] ?? "prefer" {
            case "disable":
                tls = .disable
            case "prefer", "allow":
                tls = .prefer(try Self.sslContext(verify: false))
            case "require":
                tls = .require(try Self.sslContext(verify: false))
            case "verify-ca", "verify-full":
                tls = .require(try Self.sslContext(verify: true))
            case let other:
                throw LogStoreError(
                    .invalidArgument, "Unknown sslmode '\(other)' in \(Self.redacted(url)): use disable, prefer, require or verify-full.")
            }
            if let socketDirectory = query["host"], socketDirectory.hasPrefix("/") {
                let port = c.port ?? 5432
                connection = PostgresConnection.Configuration(
                    unixSocketPath: socketDirectory + "/.s.PGSQL.\(port)", username: user, password: password, database: database)
            } else {
                guard let host = c.host, !host.isEmpty else {
                    throw LogStoreError(.invalidArgument, "The PostgreSQL URL \(Self.redacted(url)) names no host.")
                }
                connection = PostgresConnection.Configuration(
                    host: host, port: c.port ?? 5432, username: user, password: password, database: database, tls: tls)
            }
            if let schema = query["schema"], !schema.isEmpty { self.schema = schema }
            if let n = query["max_connections"] {
                guard let value = Int(n), value > 0 else {
                    throw LogStoreError(.invalidArgument, "max_connections must be a positive integer, not '\(n)'.")
                }
                maximumConnections = value
            }
            connection.options.additionalStartupParameters.append(("application_name", query["application_name"] ?? "LogStore"))
        }

        static func sslContext(verify: Bool) throws -> NIOSSLContext {
            var tls = TLSConfiguration.makeClientConfiguration()
            if !verify { tls.certificateVerification = .none }
            do {
                return try NIOSSLContext(configuration: tls)
            } catch {
                throw LogStoreError(.invalidArgument, "NIOSSL refused the TLS configuration: \(error).", underlying: error)
            }
        }

        /// `url` with its password replaced by `***`, for messages and logs.
        static func redacted(_ url: String) -> String {
            guard var c = URLComponents(string: url), c.password != nil else { return url }
            c.password = "***"
            return c.string ?? url
        }

        /// ``statementTimeout`` as the value of PostgreSQL's `statement_timeout` (milliseconds, at
        /// least 1: 0 would turn it off).
        var statementTimeoutSetting: String {
            let ms = statementTimeout.components.seconds * 1000 + statementTimeout.components.attoseconds / 1_000_000_000_000_000
            return String(max(1, ms))
        }

        /// The server as messages name it: `postgres://user@host:port/database (schema s)`.
        var place: String {
            let server = connection.host.map { "\($0):\(connection.port ?? 5432)" } ?? connection.unixSocketPath ?? "a connected channel"
            return "postgres://\(connection.username)@\(server)/\(connection.database ?? connection.username) (schema \(schema))"
        }
    }

    /// How a write that conflicts with concurrent writes (SQLSTATE 40001, or a deadlock 40P01) is
    /// run again: the transaction is rolled back and the whole write block runs again, after an
    /// exponential backoff with full jitter (`random(0, min(maximumBackoff, initialBackoff *
    /// 2^attempt))`), until it commits or `timeout` has passed since its first attempt (then
    /// `.writeConflict`). A write block must therefore be safe to run more than once: keep side
    /// effects other than its writes out of it (the Scaling Out with PostgreSQL article).
    public struct RetryPolicy: Sendable {
        /// The first backoff's upper bound. Default 1 ms.
        public var initialBackoff: Duration = .milliseconds(1)
        /// The largest backoff. Default 100 ms.
        public var maximumBackoff: Duration = .milliseconds(100)
        /// How long a write keeps retrying before it fails with `.writeConflict`. Default 30 s.
        public var timeout: Duration = .seconds(30)

        /// The defaults.
        public init() {}

        /// The sleep before attempt `attempt + 1` (attempt counts from 1).
        func backoff(after attempt: Int) -> Duration {
            let cap = min(maximumBackoff, initialBackoff * (1 << min(attempt, 20)))
            let nanos = cap.components.seconds * 1_000_000_000 + cap.components.attoseconds / 1_000_000_000
            return .nanoseconds(Int64.random(in: 0...max(0, nanos)))
        }
    }
}
