import Foundation
import LogStoreCompactCommands
import LogStoreEngine
import Synchronization
import XCTest
import _LogStoreTestSupport

final class BackupCommandTests: XCTestCase {
    /// Every record of a closed store, by type and key.
    func contents(_ dir: String) throws -> [String: [RecordKey: [UInt8]]] {
        var o = LogEngineOptions.replayOnly
        o.durability = .none
        let e = try LogEngine.open(directory: dir, options: o)
        defer { try? e.close() }
        let s = try e.snapshot()
        var out: [String: [RecordKey: [UInt8]]] = [:]
        for t in s.itemTypes {
            try s.forEach(ofType: t) { k, v in
                out[t, default: [:]][k] = Array(v)
                return true
            }
        }
        return out
    }

    func testBackupCopiesAClosedStoreIntoAVerifiedBackupThatPassesVerify() throws {
        let store = try makeStore()
        let before = try snapshotFiles(store.dir)
        let dest = temporaryPath("backup")
        let run = runTool(["backup", store.dir, dest, "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains("OK: verified"), run.stdout)
        XCTAssertTrue(run.stdout.contains("through transaction \(store.lastSequence)"), run.stdout)
        XCTAssertEqual(try snapshotFiles(store.dir), before, "the store is only read")
        XCTAssertEqual(runTool(["verify", dest, "--progress", "none"]).code, 0)
        XCTAssertEqual(try contents(dest), try contents(store.dir))
    }

    func testBackupJSONAndAnIncrementalSecondRun() throws {
        let store = try makeStore()
        let dest = temporaryPath("backup")
        let first = try runTool(["backup", store.dir, dest, "--json"]).json()
        XCTAssertEqual(first["command"] as? String, "backup")
        XCTAssertEqual(first["ok"] as? Bool, true)
        XCTAssertEqual(first["sequence"] as? UInt64, store.lastSequence)
        XCTAssertEqual(first["segmentsReused"] as? Int, 0)
        XCTAssertEqual(first["verification"] as? String, "read-back")
        // The store grows; the second backup into the same directory copies what is new.
        let e = try LogEngine.open(directory: store.dir, options: StoreFixture.options())
        try e.commit(
            (0..<200).map { .put(type: "More", key: RecordKey(Array("m\($0)".utf8)), value: AttributeValue.int(Int64($0)).encoded()) })
        try e.close()
        let second = try runTool(["backup", store.dir, dest, "--json", "--verify", "replay"]).json()
        XCTAssertGreaterThan(second["segmentsReused"] as? Int ?? 0, 0)
        XCTAssertLessThan(second["bytesCopied"] as? Int ?? .max, second["bytes"] as? Int ?? 0)
        XCTAssertEqual(try contents(dest), try contents(store.dir))
        XCTAssertEqual(runTool(["verify", dest, "--progress", "none"]).code, 0)
    }

    func testBackupRefusesALockedStoreAForeignDestinationAndADestinationInsideTheStore() throws {
        let store = try makeStore()
        let foreign = temporaryPath("foreign")
        try FileManager.default.createDirectory(atPath: foreign, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: foreign + "/photo.jpg", contents: Data([1, 2, 3]))
        XCTAssertEqual(runTool(["backup", store.dir, foreign, "--progress", "none"]).code, ToolExitCode.usage.rawValue)
        XCTAssertEqual(runTool(["backup", store.dir, store.dir + "/inner", "--progress", "none"]).code, ToolExitCode.usage.rawValue)
        XCTAssertEqual(
            runTool(["backup", temporaryPath("missing"), temporaryPath("b"), "--progress", "none"]).code, ToolExitCode.notAStore.rawValue)
        let e = try LogEngine.open(directory: store.dir, options: StoreFixture.options())
        let locked = runTool(["backup", store.dir, temporaryPath("b2"), "--json"])
        XCTAssertEqual(locked.code, ToolExitCode.locked.rawValue)
        try e.close()
    }

    /// Backup under load: 16 writers and 4 readers on a live store while it is backed up three
    /// times; each backup opens, passes `verify`, and holds exactly the commits up to its
    /// sequence number (the writers' own record of what they committed is the oracle).
    func testBackupsUnderSixteenWritersPassVerifyAndHoldExactlyTheCommittedState() throws {
        let dir = temporaryPath("live")
        var o = LogEngineOptions()
        o.segmentSize = 128 << 10
        o.compactionMinimumDeadBytes = 64 << 10
        o.compactionThreshold = 0.3
        o.checkpointInterval = 256 << 10
        let e = try LogEngine.open(directory: dir, options: o)
        try e.declareIndexes([IndexDefinition(attributes: [["n"]])], ofType: "W0")
        let committed = Mutex<[UInt64: [RecordOperation]]>([:])
        let stop = Atomic<Bool>(false)
        let failures = Mutex<[String]>([])
        let group = DispatchGroup()
        for w in 0..<16 {
            DispatchQueue.global().async(group: group) {
                var i = 0
                while !stop.load(ordering: .relaxed) {
                    let value = AttributeValue.map([
                        "n": .int(Int64(i)), "w": .int(Int64(w)), "pad": .string(String(repeating: "p", count: 150)),
                    ]).encoded()
                    var ops: [RecordOperation] = [.put(type: "W\(w % 4)", key: RecordKey(Array("w\(w)-\(i % 40)".utf8)), value: value)]
                    if i % 9 == 8 { ops.append(.delete(type: "W\(w % 4)", key: RecordKey(Array("w\(w)-\((i + 7) % 40)".utf8)))) }
                    do {
                        let seq = try e.commit(ops)
                        committed.withLock { $0[seq] = ops }
                    } catch {
                        failures.withLock { $0.append("writer \(w): \(error)") }
                        return
                    }
                    i += 1
                }
            }
        }
        for r in 0..<4 {
            DispatchQueue.global().async(group: group) {
                while !stop.load(ordering: .relaxed) {
                    do {
                        let s = try e.snapshot()
                        _ = try s.value(type: "W\(r)", key: RecordKey(Array("w\(r)-3".utf8)))
                    } catch {
                        failures.withLock { $0.append("reader \(r): \(error)") }
                        return
                    }
                }
            }
        }
        var reports: [BackupReport] = []
        do {
            defer {
                stop.store(true, ordering: .relaxed)
                group.wait()
            }
            for b in 0..<3 {
                Thread.sleep(forTimeInterval: 0.4)
                reports.append(
                    try e.backup(
                        to: temporaryPath("backup-\(b)"), fileSystem: POSIXFileSystem(), verification: [.readBack, .open, .replay][b]))
            }
        }
        try e.close()
        XCTAssertEqual(failures.withLock { $0 }, [])
        let log = committed.withLock { $0 }
        for report in reports {
            let verify = runTool(["verify", report.directory, "--progress", "none"])
            XCTAssertEqual(verify.code, 0, "\(report.directory): \(verify.stdout) \(verify.stderr)")
            var expected: [String: [RecordKey: [UInt8]]] = [:]
            for seq in log.keys.sorted() where seq <= report.sequence { CrashOracle.apply(log[seq] ?? [], to: &expected) }
            XCTAssertEqual(try contents(report.directory), expected, "backup at transaction \(report.sequence)")
        }
    }
}
