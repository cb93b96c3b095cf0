import Foundation
import LogStoreEngine
import XCTest

@testable import LogStoreCompactCommands

/// Stands in for the engine's in-place compaction (not in this build yet) to test the command's
/// flow: lock, call, measure, print.
struct FakeCompaction: CompactionBackend {
    var isAvailable: Bool { true }
    func compact(_ engine: LogEngine) throws -> CompactionOutcome {
        CompactionOutcome(details: [("segmentsRewritten", "\(engine.manifestInfo.segments.count)")])
    }
}

final class CompactCommandTests: XCTestCase {
    func testDryRunEstimatesTheGainAndWritesNothing() throws {
        let store = try makeStore()
        let before = try snapshotFiles(store.dir)
        let run = runTool([store.dir, "--dry-run", "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stderr)
        let json = try run.json()
        XCTAssertEqual(json["command"] as? String, "compact", "compact is the default command")
        XCTAssertEqual(json["mode"] as? String, "dryRun")
        let beforeBytes = try XCTUnwrap((json["before"] as? [String: Any])?["bytes"] as? UInt64)
        XCTAssertEqual(beforeBytes, UInt64(before.values.reduce(0) { $0 + $1.count }))
        let after = try XCTUnwrap(json["after"] as? [String: Any])
        XCTAssertEqual(after["estimated"] as? Bool, true)
        XCTAssertGreaterThan(try XCTUnwrap(json["gainBytes"] as? Int), 0)
        XCTAssertEqual(try snapshotFiles(store.dir), before)
    }

    func testCompactIntoWritesASmallerCopyWithTheSameRecords() throws {
        let store = try makeStore()
        let before = try snapshotFiles(store.dir)
        let target = temporaryPath("compacted")
        let estimate = try runTool(["compact", store.dir, "--dry-run", "--json"]).json()
        let run = runTool(["compact", store.dir, "--into", target, "--segment-size", "64K", "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stderr)
        let json = try run.json()
        XCTAssertEqual(json["mode"] as? String, "copy")
        let beforeBytes = try XCTUnwrap((json["before"] as? [String: Any])?["bytes"] as? UInt64)
        let afterBytes = try XCTUnwrap((json["after"] as? [String: Any])?["bytes"] as? UInt64)
        XCTAssertLessThan(afterBytes, beforeBytes)
        // The estimate is close to what a rewrite of the live records really takes.
        let estimated = try XCTUnwrap((estimate["after"] as? [String: Any])?["bytes"] as? UInt64)
        XCTAssertEqual(Double(estimated), Double(afterBytes), accuracy: Double(afterBytes) * 0.1)
        XCTAssertEqual(try snapshotFiles(store.dir), before, "the store itself is left as it was")

        let a = try LogEngine.open(directory: store.dir)
        let b = try LogEngine.open(directory: target)
        defer {
            try? a.close()
            try? b.close()
        }
        let sa = try a.snapshot()
        let sb = try b.snapshot()
        XCTAssertEqual(sb.itemTypes.sorted(), sa.itemTypes.sorted())
        for type in sa.itemTypes {
            for key in try sa.keys(ofType: type) {
                XCTAssertEqual(try sb.value(type: type, key: key), try sa.value(type: type, key: key))
            }
        }
    }

    func testInPlaceCompactionWithTheEngineReclaimsDeadBytesAndKeepsEveryRecord() throws {
        let store = try makeStore()
        let expected = try contents(of: store.dir)
        let run = runTool([store.dir, "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stderr)
        let json = try run.json()
        let before = (json["before"] as? [String: Any])?["bytes"] as? Int ?? 0
        let after = (json["after"] as? [String: Any])?["bytes"] as? Int ?? 0
        XCTAssertGreaterThan(before, 0)
        XCTAssertLessThan(after, before, "dead bytes reclaimed")
        XCTAssertEqual(try contents(of: store.dir), expected)
    }

    /// Every (type, key) → value of the store, through the engine.
    func contents(of dir: String) throws -> [String: [RecordKey: [UInt8]]] {
        let e = try LogEngine.open(directory: dir, options: .replayOnly)
        defer { try? e.close() }
        let s = try e.snapshot()
        var out: [String: [RecordKey: [UInt8]]] = [:]
        for t in s.itemTypes {
            for k in try s.keys(ofType: t) { out[t, default: [:]][k] = try s.value(type: t, key: k).map(Array.init) }
        }
        return out
    }

    func testInPlaceCompactionPrintsSizesBeforeAndAfterAndTheGain() throws {
        let store = try makeStore()
        let console = CapturedConsole()
        let code = CompactionBackends.$current.withValue(FakeCompaction()) {
            LogStoreCompactCLI.main([store.dir, "--progress", "none"], console: console)
        }
        XCTAssertEqual(code, 0, console.stderr)
        XCTAssertTrue(console.stdout.contains("  before  "), console.stdout)
        XCTAssertTrue(console.stdout.contains("  after   "), console.stdout)
        XCTAssertTrue(console.stdout.contains("  gain    "), console.stdout)
        XCTAssertTrue(console.stdout.contains("segmentsRewritten: "), console.stdout)
    }

    func testCompactRunsThroughTheParsedCommandWithAnInjectedConsole() throws {
        let store = try makeStore()
        let command = try CompactCommand.parse([store.dir, "--dry-run", "--progress", "none"])
        let console = CapturedConsole()
        try LogStoreCompactCLI.withConsole(console) { try command.run() }
        XCTAssertTrue(console.stdout.contains("dry run: nothing was written"), console.stdout)
    }

    func testCompactRefusesAStoreOpenElsewhereWithExitCode3() throws {
        let store = try makeStore()
        let engine = try LogEngine.open(directory: store.dir, options: StoreFixture.options())
        defer { try? engine.close() }
        XCTAssertEqual(runTool([store.dir, "--dry-run"]).code, 3)
        XCTAssertEqual(runTool(["compact", store.dir, "--into", temporaryPath("copy")]).code, 3)
    }

    func testCompactRejectsDryRunWithIntoAsAUsageError() throws {
        let store = try makeStore()
        let run = runTool([store.dir, "--dry-run", "--into", temporaryPath("x")])
        XCTAssertEqual(run.code, 2)
        XCTAssertTrue(run.stderr.contains("cannot be combined"), run.stderr)
    }

    func testCompactOfADamagedStoreExitsOne() throws {
        let store = try makeStore()
        let loc = try locationOutsideLastSegment(store)
        try flipByte(store.dir + "/" + LogStoreFormat.segmentFileName(loc.segment), at: Int(loc.offset) + 40)
        XCTAssertEqual(runTool([store.dir, "--dry-run"]).code, 1)
        XCTAssertEqual(runTool([store.dir, "--into", temporaryPath("copy")]).code, 1)
    }

    func testRecompressCompressesTextHeavyRecordsWithADictionaryAndVerifies() throws {
        let dir = temporaryPath("recompress")
        let words = ["the", "kitchen", "serves", "fresh", "pasta", "with", "basil", "and", "wine", "every", "evening", "harbour"]
        let e = try LogEngine.open(directory: dir, options: StoreFixture.options())
        for start in stride(from: 0, to: 3000, by: 100) {
            try e.write { t in
                for i in start..<(start + 100) {
                    let text = (0..<40).map { words[($0 * 7 + i * 3) % words.count] }.joined(separator: " ")
                    try t.put(
                        type: "Note", key: RecordKey(Array("n\(i)".utf8)), value: AttributeValue.map(["text": .string(text)]).encoded())
                }
            }
        }
        try e.close()
        let before = StoreAccess.measure(dir).bytes
        let run = runTool([dir, "--recompress", "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stdout + run.stderr)
        let json = try run.json()
        let engine = try XCTUnwrap(json["engine"] as? [String: Any])
        XCTAssertEqual(engine["dictionariesTrained"] as? String, "1")
        XCTAssertEqual(engine["recordsRecompressed"] as? String, "3000")
        XCTAssertLessThan(StoreAccess.measure(dir).bytes * 2, before)
        XCTAssertEqual(runTool(["verify", dir, "--progress", "none"]).code, 0)
        XCTAssertEqual(runTool([dir, "--recompress", "--into", temporaryPath("x")]).code, 2, "--recompress applies in place only")
    }
}
