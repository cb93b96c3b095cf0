import Foundation
import LogStoreCompactCommands
import LogStoreEncryption
import LogStoreEngine
import XCTest

/// `verify` and `stats` on an encrypted store: with the key (`--key-file`) they open its sealed
/// CHECKPOINT and run files, check them page by page, and report a damaged sealed page with the
/// run file and the page's offset.
final class SealedIndexToolTests: XCTestCase {
    static let key = [UInt8](repeating: 0x42, count: 32)

    func makeEncryptedStore() throws -> (dir: String, keyFile: String) {
        let dir = temporaryPath()
        var o = LogEngineOptions()
        o.durability = .none
        o.checkpointOnClose = true
        o.encryption = try .aes256GCM(key: Self.key)
        let e = try LogEngine.open(directory: dir, options: o)
        try e.declareIndexes([IndexDefinition(name: "byTag", attributes: [["tag"]])], ofType: "Secret")
        _ = try e.commit(
            (0..<2_000).map {
                .put(
                    type: "Secret", key: RecordKey(Array("secret-\($0)".utf8)),
                    value: AttributeValue.map(["tag": .string("t\($0 % 9)")]).encoded())
            })
        try e.close()
        let keyFile = temporaryPath("key")
        try Data(Self.key).write(to: URL(fileURLWithPath: keyFile))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyFile)
        return (dir, keyFile)
    }

    func testVerifyAndStatsReadASealedCheckpointAndItsRunsWithTheKey() throws {
        let store = try makeEncryptedStore()
        for command in ["verify", "stats"] {
            let run = runTool([command, store.dir, "--key-file", store.keyFile, "--progress", "none", "--json"])
            XCTAssertEqual(run.code, 0, "\(command): \(run.stdout) \(run.stderr)")
            XCTAssertFalse(run.stdout.contains("checkpoint\",\"severity\":\"damage"), "\(command): \(run.stdout)")
        }
    }

    func testVerifyNamesADamagedSealedRunPage() throws {
        let store = try makeEncryptedStore()
        let runs = try FileManager.default.contentsOfDirectory(atPath: store.dir).filter { $0.hasSuffix(".run") }.sorted()
        let name = try XCTUnwrap(runs.first)
        let path = store.dir + "/" + name
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        XCTAssertGreaterThan(bytes.count, 2 * RunFile.pageSize)
        bytes[RunFile.pageSize + 200] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let run = runTool(["verify", store.dir, "--key-file", store.keyFile, "--progress", "none", "--json"])
        XCTAssertEqual(run.code, 1, run.stdout + run.stderr)
        XCTAssertTrue(run.stdout.contains(name), run.stdout)
        XCTAssertTrue(run.stdout.contains("authenticate"), run.stdout)
        XCTAssertTrue(run.stdout.contains("\(RunFile.pageSize)"), run.stdout)
    }
}
