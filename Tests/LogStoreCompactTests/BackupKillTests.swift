import Foundation
import LogStoreEngine
import XCTest

/// `kill -9` of a running `logstore-compact backup` (the real binary, killed at random moments):
/// the store is never changed, and the destination never opens as a backup it is not.
final class BackupKillTests: XCTestCase {
    func testAKillNineDuringABackupLeavesTheStoreUntouchedAndNoHalfBackupThatOpens() throws {
        let dir = temporaryPath("store")
        var o = LogEngineOptions.replayOnly
        o.durability = .none
        o.segmentSize = 1 << 20
        o.compression = false
        let e = try LogEngine.open(directory: dir, options: o)
        for t in 0..<40 {
            try e.commit(
                (0..<100).map { i in
                    .put(
                        type: "Doc", key: RecordKey(Array("d\(t)-\(i)".utf8)),
                        value: AttributeValue.string(String(repeating: "x", count: 2_000) + "\(t)-\(i)").encoded())
                })
        }
        let sequence = try e.snapshot().sequence
        try e.flush()
        try e.close()
        let before = try snapshotFiles(dir)
        var rng = SystemRandomNumberGenerator()
        var outcomes: [String: Int] = [:]
        // The kills land at random moments of a whole backup's duration on this machine (measured
        // first, process start included), so a fast machine kills as many backups half-way as a
        // slow one. The cycles go on until one kill left a half backup (at most 200).
        func startBackup(into dest: String) throws -> Process {
            let process = Process()
            process.executableURL = productsDirectory.appendingPathComponent("logstore-compact")
            process.arguments = ["backup", dir, dest, "--progress", "none"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }
        let whole = try (0..<3).map { i -> Double in
            let start = Date()
            let process = try startBackup(into: temporaryPath("whole-\(i)"))
            process.waitUntilExit()
            XCTAssertEqual(process.terminationStatus, 0)
            return Date().timeIntervalSince(start)
        }.sorted()[1]
        var cycle = 0
        while cycle < 20 || (outcomes["refused"] == nil && cycle < 200) {
            defer { cycle += 1 }
            let dest = temporaryPath("backup-\(cycle)")
            let process = try startBackup(into: dest)
            Thread.sleep(forTimeInterval: whole * Double.random(in: 0.02...1.1, using: &rng))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            XCTAssertEqual(try snapshotFiles(dir), before, "cycle \(cycle): the store is only read")
            let names = (try? FileManager.default.contentsOfDirectory(atPath: dest)) ?? []
            if names.isEmpty {
                outcomes["nothing yet", default: 0] += 1
                continue
            }
            do {
                let b = try LogEngine.open(directory: dest, options: o)
                XCTAssertEqual(b.recoveryReport.lastSequence, sequence, "cycle \(cycle): a backup that opens is whole")
                XCTAssertEqual(try b.snapshot().count(ofType: "Doc"), 4_000)
                try b.close()
                outcomes[process.terminationReason == .exit ? "finished" : "complete", default: 0] += 1
            } catch let error as LogStoreError {
                XCTAssertTrue([.notAStore, .corruption].contains(error.code), "cycle \(cycle): \(error)")
                outcomes["refused", default: 0] += 1
                // Running the backup again into the leftovers finishes it.
                XCTAssertEqual(runTool(["backup", dir, dest, "--progress", "none"]).code, 0, "cycle \(cycle)")
            }
        }
        XCTAssertNotNil(outcomes["refused"], "no kill in \(cycle) cycles left a half backup (a whole one takes \(whole) s): \(outcomes)")
    }
}
