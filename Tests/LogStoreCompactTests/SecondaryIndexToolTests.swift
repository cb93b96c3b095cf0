import Foundation
import XCTest

@testable import LogStoreEngine

/// `verify` checks that secondary indexes equal a rebuild from the records; `stats` lists them.
final class SecondaryIndexToolTests: XCTestCase {
    let byCity = IndexDefinition(name: "city", attributes: [["city"]])

    func makeIndexedStore() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-index-tool-\(UUID().uuidString)").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        var o = LogEngineOptions()
        o.autoCompaction = false
        let e = try LogEngine.open(directory: dir, options: o)
        try e.declareIndexes([byCity], ofType: "Shop")
        try e.commit(
            (0..<50).map { i in
                .put(
                    type: "Shop", key: RecordKey(Array("s\(i)".utf8)),
                    value: AttributeValue.map(["city": .string(["Oslo", "Rome"][i % 2])]).encoded())
            })
        try e.close()
        try? FileManager.default.removeItem(atPath: dir + "/LOCK")
        return dir
    }

    func testStatsListsEachIndexWithItsEntriesAndMemory() throws {
        let dir = try makeIndexedStore()
        let run = runTool(["stats", dir, "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stdout + run.stderr)
        let indexes = try run.json()["indexes"] as? [[String: Any]]
        XCTAssertEqual(indexes?.count, 1)
        XCTAssertEqual(indexes?.first?["type"] as? String, "Shop")
        XCTAssertEqual(indexes?.first?["entries"] as? Int, 50)
        // Read from the checkpoint's runs, which are mapped files, not heap.
        XCTAssertEqual(indexes?.first?["estimatedMemoryBytes"] as? Int, 0)
        let text = runTool(["stats", dir, "--progress", "none"])
        XCTAssertTrue(text.stdout.contains("Shop: city(city)  50 entries"), text.stdout)
    }

    func testVerifyReportsAnIndexThatDisagreesWithTheRecords() throws {
        let dir = try makeIndexedStore()
        XCTAssertEqual(runTool(["verify", dir, "--progress", "none"]).code, 0, "precondition: a healthy store")
        // A checkpoint whose index says one shop is in another city (well-formed, checksummed).
        let path = dir + "/CHECKPOINT"
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        // Read the index from the runs CHECKPOINT 4 names, change it, and write the change as runs
        // named by a new CHECKPOINT 4.
        let fs = POSIXFileSystem()
        var cp = try CheckpointFile.read(bytes, directory: dir, fs: fs, validatingRuns: true).get()
        let v4 = try XCTUnwrap(cp.runReferences)
        let k = RecordKey(Array("s0".utf8))
        try cp.index.secondary["Shop"]?["city"]?.entries.remove(IndexKeyEncoding.entry([.string("Oslo")], key: k))
        try cp.index.secondary["Shop"]?["city"]?.entries.insert(IndexKeyEncoding.entry([.string("Rome")], key: k))
        var writer = RunSetWriter(fs: fs, directory: dir, storeId: v4.storeId, cipher: nil, sequence: v4.sequence, next: v4.nextRun)
        let (_, references) = try writer.write(cp.index)
        let forged = CheckpointFileV4(
            generation: v4.generation, sequence: v4.sequence, createdAtMillis: v4.createdAtMillis, storeId: v4.storeId,
            segments: v4.segments, indexes: references, nextRun: writer.next, meta: v4.meta
        ).encode()
        try Data(forged).write(to: URL(fileURLWithPath: path))
        let run = runTool(["verify", dir, "--json", "--progress", "none"])
        XCTAssertEqual(run.code, 1, run.stdout + run.stderr)
        let messages = (try run.json()["issues"] as? [[String: Any]] ?? []).compactMap { $0["message"] as? String }
        XCTAssertTrue(messages.contains { $0.contains("secondary index Shop.city") }, "\(messages)")
    }
}
