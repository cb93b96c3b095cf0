import Foundation
import LogStoreCompactCommands
import LogStoreEncryption
import LogStoreEngine
import XCTest

/// `--key-file` and `--key-env`: the key never comes from the command line, a malformed key file
/// or variable is a usage error that never shows its contents, a key given for a clear store is
/// refused before anything is read or changed, and an encrypted store is read with its key only.
final class KeyOptionTests: XCTestCase {
    static let hexKey = String(repeating: "0123456789abcdef", count: 4)

    func writeKeyFile(_ bytes: [UInt8], mode: Int = 0o600) throws -> String {
        let path = temporaryPath("key")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    func testAKeyOnTheCommandLineIsRefusedWithTheReason() throws {
        let store = try makeStore()
        let run = runTool(["stats", store.dir, "--key", Self.hexKey])
        XCTAssertEqual(run.code, ToolExitCode.usage.rawValue)
        XCTAssertTrue(run.stderr.contains("--key is refused"), run.stderr)
        XCTAssertTrue(run.stderr.contains("process list"), run.stderr)
        XCTAssertTrue(run.stderr.contains("--key-file"), run.stderr)
        XCTAssertFalse(run.stderr.contains(Self.hexKey), "the key is never echoed")
        XCTAssertEqual(runTool(["stats", store.dir, "--key-file", "a", "--key-env", "B"]).code, ToolExitCode.usage.rawValue)
    }

    func testMalformedKeyFilesAreUsageErrorsThatNeverShowTheirContents() throws {
        let store = try makeStore()
        let secret = Array("not-a-key-but-a-secret-anyway".utf8)
        for bytes in [
            secret, [UInt8](repeating: 0x41, count: 31), Array((Self.hexKey + "0").utf8), Array(("zz" + Self.hexKey.dropFirst(2)).utf8),
        ] {
            let file = try writeKeyFile(bytes)
            let run = runTool(["stats", store.dir, "--key-file", file, "--progress", "none"])
            XCTAssertEqual(run.code, ToolExitCode.usage.rawValue, run.stderr)
            XCTAssertTrue(run.stderr.contains("holds \(bytes.count) bytes"), run.stderr)
            XCTAssertFalse(run.stderr.contains("secret"), run.stderr)
        }
        let missing = runTool(["stats", store.dir, "--key-file", temporaryPath("none")])
        XCTAssertEqual(missing.code, ToolExitCode.usage.rawValue)
        XCTAssertTrue(missing.stderr.contains("no such file"), missing.stderr)
    }

    func testKeyParsingAcceptsRawBytesAndHexWithWhitespace() throws {
        let raw = [UInt8](0..<32)
        XCTAssertEqual(try KeyOptions.parse(["--key-file", try writeKeyFile(raw)]).load()?.bytes, raw)
        let hex = "  " + raw.map { String(format: "%02X", $0) }.joined() + "\r\n"
        XCTAssertEqual(try KeyOptions.parse(["--key-file", try writeKeyFile(Array(hex.utf8))]).load()?.bytes, raw)
        XCTAssertEqual(try KeyOptions.parse(["--key-env", "K"]).load(environment: ["K": Self.hexKey + "\n"])?.bytes.count, 32)
        XCTAssertNil(try KeyOptions.parse([]).load())
        for environment in [[:], ["K": ""], ["K": "abc"], ["K": String(repeating: "g", count: 64)]] {
            XCTAssertThrowsError(try KeyOptions.parse(["--key-env", "K"]).load(environment: environment)) { error in
                XCTAssertEqual((error as? ToolFailure)?.code, .usage)
                XCTAssertFalse((error as? ToolFailure)?.message.contains("ggg") ?? true)
            }
        }
    }

    func testAKeyForAClearStoreIsRefusedByEveryCommandAndChangesNothing() throws {
        let store = try makeStore()
        let keyFile = try writeKeyFile(Array(Self.hexKey.utf8))
        let before = try snapshotFiles(store.dir)
        let target = temporaryPath("target")
        for args in [
            ["stats", store.dir], ["verify", store.dir], ["dump", store.dir], ["compact", store.dir, "--dry-run"],
            ["compact", store.dir, "--into", target], ["compact", store.dir], ["migrations", store.dir],
            ["salvage", store.dir, "--into", target],
            ["backup", store.dir, target], ["restore", store.dir, target],
        ] {
            let run = runTool(args + ["--key-file", keyFile, "--progress", "none", "--json"])
            XCTAssertEqual(run.code, ToolExitCode.usage.rawValue, "\(args[0]): \(run.stderr)")
            XCTAssertTrue(run.stderr.contains("not encrypted"), "\(args[0]): \(run.stderr)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: target), "\(args[0]) wrote nothing")
        }
        XCTAssertEqual(try snapshotFiles(store.dir), before, "nothing changed")
        // A readable-by-others key file draws a warning.
        let open = try writeKeyFile(Array(Self.hexKey.utf8), mode: 0o644)
        XCTAssertTrue(runTool(["stats", store.dir, "--key-file", open]).stderr.contains("can be read by other users"))
    }

    func testTheReadingCommandsReadAnEncryptedStoreWithItsKeyOnly() throws {
        var options = StoreFixture.options()
        options.encryption = try .aes256GCM(key: try KeyOptions.parse(["--key-env", "K"]).load(environment: ["K": Self.hexKey])!.bytes)
        let store = try StoreFixture.build(in: temporaryPath("encrypted"), options: options)
        let keyFile = try writeKeyFile(Array(Self.hexKey.utf8))
        let wrongFile = try writeKeyFile([UInt8](repeating: 7, count: 32))
        let before = try snapshotFiles(store.dir)
        for args in [["stats", store.dir], ["verify", store.dir], ["dump", store.dir], ["compact", store.dir, "--dry-run"]] {
            let run = runTool(args + ["--key-file", keyFile, "--progress", "none", "--json"])
            XCTAssertEqual(run.code, 0, "\(args[0]): \(run.stderr)")
            for (missing, extra) in [("no key", [String]()), ("wrong key", ["--key-file", wrongFile])] {
                let refused = runTool(args + extra + ["--progress", "none"])
                XCTAssertEqual(refused.code, ToolExitCode.usage.rawValue, "\(args[0]), \(missing): \(refused.stderr)")
                XCTAssertTrue(refused.stderr.contains("key"), "\(args[0]), \(missing): \(refused.stderr)")
            }
        }
        let stats = runTool(["stats", store.dir, "--key-file", keyFile, "--json", "--progress", "none"])
        XCTAssertTrue(stats.stdout.contains("\"User\""), stats.stdout)
        let verify = runTool(["verify", store.dir, "--key-file", keyFile, "--json", "--progress", "none"])
        XCTAssertTrue(verify.stdout.contains("\"ok\":true") || verify.stdout.contains("\"ok\": true"), verify.stdout)
        XCTAssertEqual(try snapshotFiles(store.dir), before, "reading commands change nothing")
    }

    func testTheWritingCommandsWriteEncryptedStoresFromAnEncryptedOne() throws {
        var options = StoreFixture.options()
        options.encryption = try .aes256GCM(key: try KeyOptions.parse(["--key-env", "K"]).load(environment: ["K": Self.hexKey])!.bytes)
        let store = try StoreFixture.build(in: temporaryPath("encrypted"), options: options)
        let keyFile = try writeKeyFile(Array(Self.hexKey.utf8))
        let copy = temporaryPath("copy")
        let salvaged = temporaryPath("salvaged")
        let backup = temporaryPath("backup")
        let restored = temporaryPath("restored")
        for args in [
            ["compact", store.dir, "--into", copy], ["salvage", store.dir, "--into", salvaged], ["backup", store.dir, backup],
            ["restore", backup, restored], ["compact", store.dir],
        ] {
            let run = runTool(args + ["--key-file", keyFile, "--progress", "none"])
            XCTAssertEqual(run.code, 0, "\(args[0]): \(run.stderr)")
        }
        for dir in [store.dir, copy, salvaged, backup, restored] {
            // The fixture's notes hold "note 1", "note 2"... in the clear before sealing.
            for (name, bytes) in try snapshotFiles(dir) {
                XCTAssertNil(bytes.range(of: Data("note 1".utf8)), "\(dir)/\(name) shows a value")
                XCTAssertNil(bytes.range(of: Data("Note".utf8)), "\(dir)/\(name) shows a type name")
            }
            XCTAssertEqual(runTool(["stats", dir, "--progress", "none"]).code, ToolExitCode.usage.rawValue, "\(dir) needs its key")
            let stats = runTool(["stats", dir, "--key-file", keyFile, "--json", "--progress", "none"])
            XCTAssertEqual(stats.code, 0, "\(dir): \(stats.stderr)")
        }
    }
}
