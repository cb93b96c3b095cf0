import Foundation
import XCTest

@testable import LogStoreEngine

/// One engine per store directory, in this process and across processes.
final class LockTests: XCTestCase {
    func testSecondOpenInSameProcessIsLocked() throws { try Scenarios.secondOpenIsLocked(.posix(self)) }

    func testDeletedLockFileStillExcludesASecondOpenInSameProcess() throws {
        try Scenarios.deletedLockFileStillExcludes(.posix(self))
        try Scenarios.deletedLockFileStillExcludes(.memory())
    }

    /// Two writers on one log: with `LOCK` deleted, another process that locks the
    /// store directory (as the engine does) is refused while the engine is open, and the engine
    /// is refused while another process holds the directory.
    func testDeletedLockFileStillExcludesAnotherProcess() throws {
        try checkExclusionOfAnotherProcess(lockingDirectory: true)
    }

    func testSecondProcessCannotTakeTheLock() throws {
        try checkExclusionOfAnotherProcess(lockingDirectory: false)
    }

    /// Another process (`flock(1)`) locks the store's `LOCK` file, or with `lockingDirectory` its
    /// directory with `LOCK` deleted: refused while the engine is open, and refusing the engine
    /// while it holds the lock.
    func checkExclusionOfAnotherProcess(lockingDirectory: Bool) throws {
        guard let flock = ["/usr/bin/flock", "/bin/flock"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw XCTSkip("flock(1) (util-linux) is not installed")
        }
        let h = StoreHarness.posix(self)
        let dir = h.newStorePath()
        let lockPath = _joinPath(dir, LogStoreFormat.lockFileName)
        let target = lockingDirectory ? dir : lockPath
        func dropLockFile() {
            if lockingDirectory { try? FileManager.default.removeItem(atPath: lockPath) }
        }
        func flockSucceeds() throws -> Bool {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: flock)
            p.arguments = ["-n", target, "true"]
            try p.run()
            p.waitUntilExit()
            return p.terminationStatus == 0
        }

        let e = try h.open(dir)
        dropLockFile()
        XCTAssertFalse(try flockSucceeds(), "another process took \(target) while the engine holds it")
        try e.close()
        XCTAssertTrue(try flockSucceeds(), "the lock on \(target) was not released by close()")
        // And the other way round: while another process holds it, open fails with .locked.
        // `flock <target> cat` holds the lock until its stdin closes. It waits for the lock (rather
        // than `-n`, which gives up at once) because the probing opens below hold it for a moment each.
        dropLockFile()
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: flock)
        holder.arguments = ["-w", "60", target, "cat"]
        let stdin = Pipe()
        holder.standardInput = stdin
        holder.standardOutput = FileHandle.nullDevice
        try holder.run()
        defer {
            try? stdin.fileHandleForWriting.close()
            holder.waitUntilExit()
        }
        // Wait (bounded) until the child holds the lock.
        var locked = false
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            do {
                try h.open(dir).close()
                dropLockFile()
                Thread.sleep(forTimeInterval: 0.01)
            } catch let err as LogStoreError where err.code == .locked {
                XCTAssertEqual(err.path, lockPath)
                locked = true
                break
            }
        }
        XCTAssertTrue(locked, "open succeeded while another process held \(target)")
        try stdin.fileHandleForWriting.close()
        holder.waitUntilExit()
        XCTAssertEqual(holder.terminationStatus, 0)
        try h.open(dir).close()
    }
}

extension Scenarios {
    static func secondOpenIsLocked(_ h: StoreHarness) throws {
        let dir = h.newStorePath()
        let e = try h.open(dir)
        try write(e, workloadTransaction(0))
        let err = assertThrowsLogStoreError(.locked, h.name) { try h.open(dir) }
        XCTAssertEqual(err?.path, _joinPath(dir, LogStoreFormat.lockFileName))
        // The failed open changed nothing for the holder.
        try write(e, workloadTransaction(1))
        try e.close()
        let e2 = try h.open(dir)
        XCTAssertEqual(e2.recoveryReport.transactionsReplayed, 2)
        try e2.close()
        // Dropping an engine without close() releases the lock too.
        do { _ = try h.open(dir) }
        try h.open(dir).close()
    }

    /// Two writers on one log: deleting `LOCK` under an open store does not let a
    /// second opener in.
    static func deletedLockFileStillExcludes(_ h: StoreHarness) throws {
        let dir = h.newStorePath()
        let lockPath = _joinPath(dir, LogStoreFormat.lockFileName)
        let e = try h.open(dir)
        try write(e, workloadTransaction(0))
        try h.fs.removeFile(atPath: lockPath)
        XCTAssertNil(h.fs.itemKind(atPath: lockPath))
        assertThrowsLogStoreError(.locked, h.name) { try h.open(dir) }
        // Replacing it with a new file does not help either.
        _ = try h.fs.open(lockPath, mode: .createOrTruncate)
        assertThrowsLogStoreError(.locked, h.name) { try h.open(dir) }
        try write(e, workloadTransaction(1))
        try e.close()
        let e2 = try h.open(dir)
        XCTAssertEqual(e2.recoveryReport.transactionsReplayed, 2)
        try e2.close()
    }
}
