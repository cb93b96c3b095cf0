import Foundation
import LogStore
import LogStoreEngine
import NIOCore
import PostgresNIO
import Synchronization
import Testing

@testable import LogStorePostgres

/// Bad days: a connection dropped in the middle of a transaction, a server that ends every
/// connection, a full pool, a statement the server cancels, a commit the connection breaks under,
/// rows another application wrote. Each is a typed error (or a transparent retry), never a
/// partial commit, and the store recovers by itself.
@Suite(.serialized, .enabled(if: PostgresTestServer.isAvailable, Comment(rawValue: PostgresTestServer.skipReason)))
final class PostgresFailureTests {
    let scope = PostgresTestScope()

    /// A store on a new schema whose connections carry a unique application name (so that the
    /// test can end them from another session).
    func store(configure: (inout PostgresDataStore.Configuration) -> Void = { _ in }) throws -> (PostgresDataStore, String) {
        let schema = scope.schema("x")
        let name = "LogStoreFailureTest" + UUID().uuidString.prefix(8)
        var c = try PostgresTestServer.configuration(schema: schema)
        c.connection.options.additionalStartupParameters = [("application_name", name)]
        configure(&c)
        let s = try scope.open(c)
        return (s, name)
    }

    static func terminate(_ application: String) throws {
        try PostgresTestServer.execute(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE application_name = '\(application)' AND pid <> pg_backend_pid()"
        )
    }

    @Test func aConnectionDroppedMidTransactionCommitsNothingAndTheBlockRunsAgain() throws {
        let (s, name) = try store()
        let runs = Atomic<Int>(0)
        try s.writeSync { a in
            let run = runs.add(1, ordering: .relaxed).newValue
            try a.insert(Note(id: "a", text: "first", count: run))
            _ = try a.item(ofType: Note.self, id: "a")  // sends the insert, inside the transaction
            if run == 1 { try Self.terminate(name) }
            _ = try a.item(ofType: Note.self, id: "a")  // fails on the first run: the connection is gone
            try a.insert(Note(id: "b", text: "second", count: run))
        }
        #expect(runs.load(ordering: .relaxed) == 2, "the block ran again on a new connection")
        let notes = try s.read { try $0.items(forRequest: DataStoreRequest(itemType: Note.self)) }
        #expect(notes.map(\.id) == ["a", "b"])
        #expect(notes.allSatisfy { $0.count == 2 }, "nothing of the first run was committed")
    }

    @Test func aConnectionDroppedOnEveryRunIsServerUnavailableAndCommitsNothing() throws {
        let (s, name) = try store()
        try s.writeSync { try $0.insert(Note(id: "seed", text: "", count: 0)) }
        #expect {
            try s.writeSync { a in
                try a.insert(Note(id: "a", text: "", count: 1))
                _ = try a.item(ofType: Note.self, id: "a")
                try Self.terminate(name)
                _ = try a.item(ofType: Note.self, id: "a")
            }
        } throws: { ($0 as? LogStoreError)?.code == .serverUnavailable }
        #expect(try s.read { try $0.item(ofType: Note.self, id: "a") } == nil)
    }

    @Test func aServerThatEndsEveryConnectionIsRecoveredFromWithoutAnError() throws {
        let (s, name) = try store()
        // Several idle connections in the pool, then all of them ended (a restart or failover).
        try s.writeSync { try $0.insert(Note(id: "a", text: "", count: 1)) }
        for _ in 0..<4 { _ = try s.read { try $0.item(ofType: Note.self, id: "a") } }
        try Self.terminate(name)
        Thread.sleep(forTimeInterval: 0.1)
        try s.writeSync { try $0.insert(Note(id: "b", text: "", count: 2)) }
        #expect(try s.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Note.self)) } == 2)
    }

    @Test func aFullPoolIsServerUnavailableAfterTheLeaseTimeoutAndRecovers() throws {
        let (s, _) = try store {
            $0.maximumConnections = 2
            $0.leaseTimeout = .milliseconds(300)
        }
        try s.writeSync { try $0.insert(Note(id: "a", text: "", count: 1)) }
        let group = DispatchGroup()
        let holding = DispatchSemaphore(value: 0)
        for _ in 0..<2 {
            DispatchQueue.global().async(group: group) {
                _ = try? s.read { a -> Note? in
                    let n = try a.item(ofType: Note.self, id: "a")
                    holding.signal()
                    Thread.sleep(forTimeInterval: 1.5)
                    return n
                }
            }
        }
        holding.wait()
        holding.wait()
        let start = ContinuousClock.now
        #expect {
            try s.read { try $0.item(ofType: Note.self, id: "a") }
        } throws: { ($0 as? LogStoreError)?.code == .serverUnavailable }
        #expect(ContinuousClock.now - start < .seconds(1.2), "it waited the lease timeout, not for the readers")
        group.wait()
        #expect(try s.read { try $0.item(ofType: Note.self, id: "a") }?.count == 1)
    }

    @Test func aStatementTheServerCancelsIsStatementTimeoutAndRollsBack() throws {
        let (s, _) = try store { $0.statementTimeout = .milliseconds(500) }
        try s.writeSync { try $0.insert(Note(id: "a", text: "", count: 1)) }
        // Another session holds a lock on the table: every statement on it waits.
        let c = try PostgresTestServer.configuration(schema: "public")
        let other = try PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.next(), configuration: c.connection, id: 7, logger: c.logger
        ).wait()
        defer {
            let closing: EventLoopFuture<Void> = other.close()
            _ = try? closing.wait()
        }
        let table = PostgresSchema.qualified(s.configuration.schema, "Note")
        _ = try other.query("BEGIN", logger: c.logger).wait()
        _ = try other.query(PostgresQuery(unsafeSQL: "LOCK TABLE \(table) IN ACCESS EXCLUSIVE MODE"), logger: c.logger).wait()
        #expect {
            try s.read { try $0.item(ofType: Note.self, id: "a") }
        } throws: { ($0 as? LogStoreError)?.code == .statementTimeout }
        #expect {
            try s.writeSync { a in
                try a.insert(Note(id: "b", text: "", count: 2))
                try a.insert(Note(id: "a", text: "", count: 3))
            }
        } throws: { ($0 as? LogStoreError)?.code == .statementTimeout }
        _ = try other.query("ROLLBACK", logger: c.logger).wait()
        try s.read { a throws in
            #expect(try a.item(ofType: Note.self, id: "a")?.count == 1, "the cancelled write committed nothing")
            #expect(try a.item(ofType: Note.self, id: "b") == nil)
        }
        try s.writeSync { try $0.insert(Note(id: "b", text: "", count: 2)) }
    }

    @Test func aCommitThatOutlivesItsConnectionRunsOnceOrNotAtAll() throws {
        let (s, name) = try store()
        try s.writeSync { try $0.insert(Note(id: "a", text: "", count: 1)) }
        // An administrator's deferred trigger makes every commit of the table take a second: the
        // connection is ended while the server is committing.
        let schema = s.configuration.schema.sqlIdentifier
        try PostgresTestServer.execute(
            "CREATE FUNCTION \(schema).slow() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1); RETURN NULL; END $$")
        try PostgresTestServer.execute(
            "CREATE CONSTRAINT TRIGGER slow AFTER INSERT OR UPDATE ON \(schema).\"Note\" DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION \(schema).slow()"
        )
        let killer = DispatchQueue.global()
        killer.asyncAfter(deadline: .now() + 0.4) { try? Self.terminate(name) }
        let runs = Atomic<Int>(0)
        do {
            try s.writeSync { a in
                runs.add(1, ordering: .relaxed)
                let n = try a.item(ofType: Note.self, id: "a")?.count ?? 0
                try a.insert(Note(id: "a", text: "", count: n + 1))
            }
        } catch let e as LogStoreError {
            #expect(e.code == .commitOutcomeUnknown || e.code == .serverUnavailable, "\(e)")
        }
        try PostgresTestServer.execute("DROP TRIGGER slow ON \(schema).\"Note\"")
        let count = try s.read { try $0.item(ofType: Note.self, id: "a")?.count }
        // The server said it ended the session before the commit: the block ran again, once.
        #expect(count == 2, "committed exactly once (\(runs.load(ordering: .relaxed)) runs)")
    }

    @Test func aBrokenConnectionDuringCommitIsCommitOutcomeUnknown() {
        let during = PostgresErrors.map(ChannelError.ioOnClosedChannel, place: "test", duringCommit: true)
        #expect(during.code == .commitOutcomeUnknown)
        let before = PostgresErrors.map(ChannelError.ioOnClosedChannel, place: "test", duringCommit: false)
        #expect(before.code == .serverUnavailable)
    }

    @Test func rowsAnotherApplicationWroteAreTypedErrorsNotCrashes() throws {
        let (s, _) = try store()
        try s.writeSync { try $0.insert(Note(id: "good", text: "", count: 1)) }
        let table = PostgresSchema.qualified(s.configuration.schema, "Note")
        try PostgresTestServer.execute(
            "INSERT INTO \(table) (id, version, data) VALUES ('bad', 1, '{\"id\": \"bad\", \"text\": 5, \"count\": \"many\"}'), ('worse', 1, '[1, 2]')"
        )
        for id in ["bad", "worse"] {
            #expect {
                try s.read { try $0.item(ofType: Note.self, id: id) }
            } throws: { error in
                guard let code = (error as? LogStoreError)?.code else { return false }
                return code == .decodingFailed || code == .corruption
            }
        }
        #expect(try s.read { try $0.item(ofType: Note.self, id: "good") }?.count == 1)
    }
}
