import Foundation
import LogStoreCompactCommands
import LogStoreEngine
import XCTest

final class StatsCommandTests: XCTestCase {
    func testStatsJSONReportsSegmentsTypesSequenceAndBytesThatAddUp() throws {
        let store = try makeStore()
        let run = runTool(["stats", store.dir, "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stderr)
        let json = try run.json()
        XCTAssertEqual(json["command"] as? String, "stats")
        let segments = try XCTUnwrap(json["segments"] as? [String: Any])
        let files = try segmentFiles(store.dir)
        XCTAssertGreaterThanOrEqual(files.count, 3, "the fixture should span several segments")
        XCTAssertEqual(segments["count"] as? Int, files.count)
        let list = try XCTUnwrap(segments["list"] as? [[String: Any]])
        XCTAssertEqual(list.compactMap { $0["file"] as? String }, files)

        let types = try XCTUnwrap(json["types"] as? [String: [String: Any]])
        XCTAssertEqual(types["User"]?["live"] as? Int, 270)
        XCTAssertEqual(types["User"]?["deletes"] as? Int, 50)
        XCTAssertEqual(types["User"]?["puts"] as? Int, 470)
        XCTAssertEqual(types["Note"]?["live"] as? Int, 40)
        XCTAssertEqual(types["Temp"]?["live"] as? Int, 0)
        XCTAssertEqual(types["Temp"]?["deleteAlls"] as? Int, 1)
        XCTAssertEqual((json["records"] as? [String: Any])?["live"] as? Int, 310)

        let live = try XCTUnwrap(json["liveBytes"] as? UInt64)
        let dead = try XCTUnwrap(json["deadBytes"] as? UInt64)
        let overhead = try XCTUnwrap(json["overheadBytes"] as? UInt64)
        XCTAssertEqual(live + dead + overhead, segments["bytes"] as? UInt64)
        XCTAssertGreaterThan(dead, 0, "overwrites and deletes leave dead bytes")
        XCTAssertGreaterThan(live, dead, "most of the fixture is live")

        let sequence = try XCTUnwrap(json["sequence"] as? [String: Any])
        XCTAssertEqual(sequence["first"] as? UInt64, 1)
        XCTAssertEqual(sequence["last"] as? UInt64, store.lastSequence)
        XCTAssertTrue(json["checkpoint"] is NSNull)
        let ratio = try XCTUnwrap((json["compression"] as? [String: Any])?["ratio"] as? Double)
        // (Each record compresses alone: without a dictionary the fixture's records, each with
        // 300 random bytes, do not shrink.)
        XCTAssertGreaterThanOrEqual(ratio, 1.0)
        XCTAssertEqual((json["issues"] as? [Any])?.count, 0)
    }

    func testStatsTextShowsCheckpointNoneAndEveryType() throws {
        let store = try makeStore()
        let run = runTool(["stats", store.dir, "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains("Checkpoint    none"), run.stdout)
        for type in ["User", "Note", "Temp"] { XCTAssertTrue(run.stdout.contains("  \(type) "), run.stdout) }
        XCTAssertTrue(run.stdout.contains("000001.log"), run.stdout)
        XCTAssertEqual(run.stderr, "", "no progress with --progress none, no diagnostics on a clean store")
    }

    func testStatsWritesNothingToTheStore() throws {
        let store = try makeStore()
        let before = try snapshotFiles(store.dir)
        XCTAssertEqual(runTool(["stats", store.dir, "--progress", "none"]).code, 0)
        XCTAssertEqual(try snapshotFiles(store.dir), before)
    }

    func testStatsRefusesAStoreOpenElsewhereWithExitCode3() throws {
        let store = try makeStore()
        let engine = try LogEngine.open(directory: store.dir, options: StoreFixture.options())
        defer { try? engine.close() }
        let run = runTool(["stats", store.dir, "--json"])
        XCTAssertEqual(run.code, 3)
        XCTAssertTrue(run.stderr.contains("in use"), run.stderr)
        let error = try XCTUnwrap(try run.json()["error"] as? [String: Any])
        XCTAssertEqual(error["code"] as? String, "locked")
        XCTAssertEqual(error["exitCode"] as? Int, 3)
    }

    func testStatsOnADirectoryThatIsNotAStoreExitsWithCode4AndCreatesNothing() throws {
        let dir = temporaryPath("plain")
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try Data("hello".utf8).write(to: URL(fileURLWithPath: dir + "/notes.txt"))
        let run = runTool(["stats", dir])
        XCTAssertEqual(run.code, 4)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["notes.txt"])
        XCTAssertEqual(runTool(["stats", dir + "/missing"]).code, 4)
    }

    func testStatsPlainProgressPrintsLinesOnStderrOnly() throws {
        let store = try makeStore()
        let run = runTool(["stats", store.dir, "--json", "--progress", "plain"])
        XCTAssertEqual(run.code, 0)
        XCTAssertTrue(run.stderr.contains("scanning: 100%"), run.stderr)
        XCTAssertFalse(run.stderr.contains("\r"))
        XCTAssertNoThrow(try run.json(), "progress must not leak into stdout")
    }

    func testStatsAutoProgressRedrawsOneLineOnATerminalAndErasesIt() throws {
        let store = try makeStore()
        let console = CapturedConsole(errIsTerminal: true)
        XCTAssertEqual(LogStoreCompactCLI.main(["stats", store.dir, "--json"], console: console), 0)
        XCTAssertTrue(console.stderr.hasPrefix("\r\u{1B}[2Kscanning: "), console.stderr)
        XCTAssertTrue(console.stderr.hasSuffix("\r\u{1B}[2K"), "the line is erased at the end")
        XCTAssertFalse(console.stderr.contains("\n"), "a redrawn line never scrolls")
    }

    func testStatsOfAnEmptyStoreHasNoSequenceAndNoCompressionRatio() throws {
        let dir = temporaryPath()
        try LogEngine.open(directory: dir, options: StoreFixture.options()).close()
        let run = runTool(["stats", dir, "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stderr)
        let json = try run.json()
        XCTAssertTrue((json["sequence"] as? [String: Any])?["first"] is NSNull)
        XCTAssertTrue((json["compression"] as? [String: Any])?["ratio"] is NSNull)
        XCTAssertEqual((json["records"] as? [String: Any])?["live"] as? Int, 0)
        XCTAssertEqual(runTool(["stats", dir, "--progress", "none"]).code, 0)
    }

    func testStatsReportsTheCheckpointSequenceAndAge() throws {
        let store = try makeStore()
        let e = try LogEngine.open(directory: store.dir)  // default options: checkpoint on close
        try e.close()
        let run = runTool(["stats", store.dir, "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stderr)
        let json = try run.json()
        let checkpoint = json["checkpoint"] as? [String: Any]
        let last = (json["sequence"] as? [String: Any])?["last"] as? Int
        XCTAssertNotNil(last)
        XCTAssertEqual(checkpoint?["sequence"] as? Int, last)
        XCTAssertNotNil(checkpoint?["ageSeconds"] as? Double)
    }
}
