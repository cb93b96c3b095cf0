import Foundation
import LogStoreCompactCommands
import LogStoreEncryption
import LogStoreEngine
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// `logstore-compact rekey`: a clear store encrypted, an encrypted store given a new key or
/// decrypted, each holding every record and opening with the new key only; and a rekey killed
/// at random moments leaves a store that opens whole with the old or the new key.
final class RekeyCommandTests: XCTestCase {
    static let keyA = String(repeating: "a1", count: 32)
    static let keyB = String(repeating: "b2", count: 32)

    func keyFile(_ hex: String) throws -> String {
        let path = temporaryPath("key")
        try Data(hex.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return path
    }

    static func encryption(_ hex: String?) throws -> StoreEncryption {
        guard let hex else { return .none }
        return try .aes256GCM(key: bytes(hex))
    }

    /// Opens `dir` with `encryption` and returns its live records per type.
    func counts(_ dir: String, _ encryption: StoreEncryption) throws -> [String: Int] {
        var o = StoreFixture.options()
        o.encryption = encryption
        let e = try LogEngine.open(directory: dir, options: o)
        defer { try? e.close() }
        let s = try e.snapshot()
        return Dictionary(uniqueKeysWithValues: s.itemTypes.map { ($0, s.count(ofType: $0)) })
    }

    func assertCode(_ code: LogStoreError.Code, _ body: () throws -> Void, line: UInt = #line) {
        XCTAssertThrowsError(try body(), line: line) { XCTAssertEqual(($0 as? LogStoreError)?.code, code, "\($0)", line: line) }
    }

    func testRekeyEncryptsChangesTheKeyAndDecrypts() throws {
        let store = try makeStore()
        let a = try keyFile(Self.keyA)
        let b = try keyFile(Self.keyB)
        let expected = try counts(store.dir, .none)
        XCTAssertEqual(expected["User"], 270)

        // Clear -> key A.
        var run = runTool(["rekey", store.dir, "--new-key-file", a, "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stderr)
        XCTAssertEqual(try counts(store.dir, try Self.encryption(Self.keyA)), expected)
        assertCode(.wrongKey) { _ = try counts(store.dir, .none) }
        for (name, bytes) in try snapshotFiles(store.dir) {
            XCTAssertNil(bytes.range(of: Data("note 1".utf8)), "\(name) shows a value")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: store.dir + ".rekey"), "the old store is removed")

        // Key A -> key B: A no longer opens it.
        run = runTool(["rekey", store.dir, "--key-file", a, "--new-key-file", b, "--progress", "none", "--json"])
        XCTAssertEqual(run.code, 0, run.stderr)
        XCTAssertTrue(run.stdout.contains("\"records\""), run.stdout)
        XCTAssertEqual(try counts(store.dir, try Self.encryption(Self.keyB)), expected)
        assertCode(.wrongKey) { _ = try counts(store.dir, try Self.encryption(Self.keyA)) }
        // The old key is refused by the command too.
        XCTAssertEqual(runTool(["rekey", store.dir, "--key-file", a, "--decrypt"]).code, ToolExitCode.usage.rawValue)

        // Key B -> clear.
        run = runTool(["rekey", store.dir, "--key-file", b, "--decrypt", "--progress", "none"])
        XCTAssertEqual(run.code, 0, run.stderr)
        XCTAssertEqual(try counts(store.dir, .none), expected)
    }

    func testRekeyRefusesKeysOnTheCommandLineAndAskForANewKeyOrDecrypt() throws {
        let store = try makeStore()
        let a = try keyFile(Self.keyA)
        let refused = runTool(["rekey", store.dir, "--new-key", Self.keyA])
        XCTAssertEqual(refused.code, ToolExitCode.usage.rawValue)
        XCTAssertFalse(refused.stderr.contains(Self.keyA), "the key is never echoed")
        XCTAssertEqual(runTool(["rekey", store.dir]).code, ToolExitCode.usage.rawValue)
        XCTAssertEqual(runTool(["rekey", store.dir, "--new-key-file", a, "--decrypt"]).code, ToolExitCode.usage.rawValue)
    }

    /// kill -9 of the real binary at random moments of a rekey from key A to key B: the store
    /// always opens with A or B (never neither), with every record; a rerun finishes the job.
    func testAKilledRekeyLeavesTheStoreWholeUnderOneKey() throws {
        #if canImport(Glibc)
            var options = StoreFixture.options()
            options.encryption = try Self.encryption(Self.keyA)
            let store = try StoreFixture.build(in: temporaryPath("killed"), options: options)
            let a = try keyFile(Self.keyA)
            let b = try keyFile(Self.keyB)
            let expected = try counts(store.dir, try Self.encryption(Self.keyA))
            let either = try StoreEncryption.aes256GCM(key: Self.bytes(Self.keyB), additionalKeys: [Self.bytes(Self.keyA)])
            var rng = SystemRandomNumberGenerator()
            var (oldKey, newKey) = (a, b)
            var underB = 0
            for _ in 0..<12 {
                let process = Process()
                process.executableURL = productsDirectory.appendingPathComponent("logstore-compact")
                process.arguments = ["rekey", store.dir, "--key-file", oldKey, "--new-key-file", newKey, "--progress", "none"]
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try process.run()
                usleep(UInt32.random(in: 0...250_000, using: &rng))
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                XCTAssertEqual(try counts(store.dir, either), expected, "after a kill, the store is whole under one key")
                // Which key holds it now decides what the next rekey starts from.
                if (try? counts(store.dir, try Self.encryption(Self.keyB))) != nil {
                    underB += 1
                    (oldKey, newKey) = (b, a)
                } else {
                    (oldKey, newKey) = (a, b)
                }
            }
            let finish = try runBinary(["rekey", store.dir, "--key-file", oldKey, "--new-key-file", newKey, "--progress", "none"])
            XCTAssertEqual(finish.code, 0, finish.stderr)
            XCTAssertEqual(try counts(store.dir, either), expected)
            XCTAssertFalse(FileManager.default.fileExists(atPath: store.dir + ".rekey"))
            print("rekey kill test: \(underB) of 12 kills left the store under key B")
        #endif
    }

    static func bytes(_ hex: String) -> [UInt8] {
        stride(from: 0, to: hex.count, by: 2).map { i in
            let start = hex.index(hex.startIndex, offsetBy: i)
            return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16) ?? 0
        }
    }
}
