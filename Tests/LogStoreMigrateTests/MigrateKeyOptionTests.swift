import Foundation
import LogStore
import LogStoreMigrateCommands
import XCTest

/// The key options of `logstore-migrate`: a key per LogStore side from a file or an environment
/// variable, never from the command line; a key for a SQLite store or for a clear LogStore store
/// is refused before anything is copied; a destination key creates an encrypted store.
final class MigrateKeyOptionTests: MigrateTestCase {
    func keyFile() throws -> String {
        let p = path("key")
        try Data(String(repeating: "ab", count: 32).utf8).write(to: URL(fileURLWithPath: p))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: p)
        return p
    }

    func testKeysOnTheCommandLineAreRefused() throws {
        let source = try seedLogStore("a.store", 3)
        for option in ["--key", "--source-key", "--destination-key"] {
            let run = migrate([source, path("b.store"), option, String(repeating: "ab", count: 32)])
            XCTAssertEqual(run.code, 2, run.stderr)
            XCTAssertTrue(run.stderr.contains("\(option) is refused"), run.stderr)
            XCTAssertFalse(run.stderr.contains(String(repeating: "ab", count: 32)), run.stderr)
        }
        XCTAssertEqual(migrate(["types", source, "--key", "x"]).code, 2)
        XCTAssertFalse(FileManager.default.fileExists(atPath: path("b.store")))
    }

    func testAKeyForAClearOrSQLiteStoreIsRefusedBeforeCopying() throws {
        let source = try seedLogStore("a.store", 3)
        let sqlite = try seedSQLite("b.sqlite", 3)
        let key = try keyFile()
        let clear = migrate([source, path("c.store"), "--source-key-file", key])
        XCTAssertEqual(clear.code, 2, clear.stderr)
        XCTAssertTrue(clear.stderr.contains("not encrypted"), clear.stderr)
        let created = migrate([source, path("d.store"), "--destination-key-file", key])
        XCTAssertEqual(created.code, 0, created.stderr)
        XCTAssertEqual(migrate(["types", path("d.store")]).code, 2, "the copy is encrypted: without its key it is refused")
        XCTAssertEqual(migrate(["types", path("d.store"), "--key-file", key]).code, 0)
        let onSQLite = migrate([sqlite, path("e.store"), "--source-key-file", key])
        XCTAssertEqual(onSQLite.code, 2, onSQLite.stderr)
        XCTAssertTrue(onSQLite.stderr.contains("applies only to a LogStore store"), onSQLite.stderr)
        XCTAssertEqual(migrate(["types", source, "--key-file", key]).code, 2)
        XCTAssertEqual(migrate(["types", source]).code, 0)
    }
}
