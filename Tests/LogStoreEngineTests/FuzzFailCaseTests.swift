import Foundation
@_spi(Fuzzing) import LogStoreEngine
import XCTest
import _LogStoreTestSupport

/// Replays, in the ordinary `swift test`, every input the fuzz targets ever crashed on
/// (Tests/Fuzz/FailCases/<target>/) and every seed of their corpora (Tests/Fuzz/Corpus/<target>/),
/// through the same entry points the libFuzzer targets call (Docs/Testing.md, "Fuzzing").
/// Each bug found also has a test of its own below, named after what it caught.
final class FuzzFailCaseTests: XCTestCase {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz")

    static let targets: [String: ([UInt8]) throws -> Void] = [
        "frame": { b in try b.withUnsafeBytes { try FuzzEntryPoints.frames($0) } },
        "segment": { b in try b.withUnsafeBytes { try FuzzEntryPoints.segmentRecovery($0) } },
        "value": { b in try b.withUnsafeBytes { try FuzzEntryPoints.attributeValue($0) } },
        "manifest": { b in try b.withUnsafeBytes { try FuzzEntryPoints.manifest($0) } },
        "ops": { b in try StoreScriptFuzzing.run(b) },
    ]

    /// The files of `Tests/Fuzz/<kind>/<target>/`, sorted (none if the directory is missing).
    static func inputs(_ kind: String, _ target: String) throws -> [URL] {
        let dir = fuzzDirectory.appendingPathComponent(kind).appendingPathComponent(target)
        guard FileManager.default.fileExists(atPath: dir.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(at: dir, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    func replay(_ kind: String) throws -> Int {
        var count = 0
        for (target, run) in Self.targets.sorted(by: { $0.key < $1.key }) {
            for file in try Self.inputs(kind, target) {
                let bytes = [UInt8](try Data(contentsOf: file))
                XCTAssertNoThrow(try run(bytes), "\(kind)/\(target)/\(file.lastPathComponent)")
                count += 1
            }
        }
        return count
    }

    func testEveryRecordedFuzzFailCasePasses() throws {
        _ = try replay("FailCases")
    }

    func testEverySeedOfTheFuzzCorporaPasses() throws {
        let n = try replay("Corpus")
        XCTAssertGreaterThan(n, 20, "the seed corpora are missing (run fuzz-corpus-seed)")
    }

    func run(_ target: String, _ name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let url = Self.fuzzDirectory.appendingPathComponent("FailCases/\(target)/\(name)")
        let bytes = [UInt8](try Data(contentsOf: url))
        XCTAssertNoThrow(try Self.targets[target]?(bytes), file: file, line: line)
    }
}
