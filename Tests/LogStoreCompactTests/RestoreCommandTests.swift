import Foundation
import LogStoreCompactCommands
import LogStoreEngine
import XCTest

final class RestoreCommandTests: XCTestCase {
    func testRestoreCopiesABackupIntoANewVerifiedStoreAndLeavesTheBackupAsItIs() throws {
        let store = try makeStore()
        let backup = temporaryPath("backup")
        XCTAssertEqual(runTool(["backup", store.dir, backup, "--progress", "none"]).code, 0)
        let before = try snapshotFiles(backup)
        let target = temporaryPath("restored")
        let run = runTool(["restore", backup, target, "--json"])
        XCTAssertEqual(run.code, 0, run.stderr)
        let json = try run.json()
        XCTAssertEqual(json["command"] as? String, "restore")
        XCTAssertEqual(json["verification"] as? String, "replay")
        XCTAssertEqual(json["sequence"] as? UInt64, store.lastSequence)
        // (Reading it takes its LOCK, which a backup written without opening it lacks.)
        XCTAssertEqual(try snapshotFiles(backup).filter { $0.key != "LOCK" }, before, "the backup is only read")
        XCTAssertEqual(runTool(["verify", target, "--progress", "none"]).code, 0)
        let e = try LogEngine.open(directory: target, options: StoreFixture.options())
        XCTAssertEqual(try e.snapshot().count(ofType: "User"), store.live["User"])
        XCTAssertEqual(try e.snapshot().count(ofType: "Note"), store.live["Note"])
        try e.close()
    }

    func testRestoreRefusesAnUnfinishedBackupAndANonEmptyTarget() throws {
        let store = try makeStore()
        let backup = temporaryPath("backup")
        XCTAssertEqual(runTool(["backup", store.dir, backup, "--progress", "none"]).code, 0)
        let target = temporaryPath("target")
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: target + "/keep.txt", contents: Data())
        XCTAssertEqual(runTool(["restore", backup, target, "--progress", "none"]).code, ToolExitCode.usage.rawValue)
        // An interrupted backup: its marker is there, its MANIFEST never was.
        try FileManager.default.removeItem(atPath: backup + "/MANIFEST")
        _ = FileManager.default.createFile(atPath: backup + "/" + LogEngine.backupMarkerFileName, contents: Data())
        let run = runTool(["restore", backup, temporaryPath("t2"), "--json"])
        XCTAssertEqual(run.code, ToolExitCode.damage.rawValue)
        XCTAssertTrue((try run.json()["error"] as? [String: Any])?["message"] as? String ?? "" != "")
    }
}
