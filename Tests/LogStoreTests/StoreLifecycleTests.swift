import Foundation
import LogStore
import LogStoreEngine
import Synchronization
import XCTest
import _LogStoreTestSupport

/// Errors that fit the cause: a lifecycle race of one instance is not
/// "another LogDataStore", and a read-only store directory is refused at `setup()` saying so.
final class StoreLifecycleTests: XCTestCase {
    func testSetupRacingTearDownOfSameStoreIsNotReportedAsLocked() throws {
        let fs = GatedLockFileSystem(InMemoryFileSystem())
        try fs.createDirectory(atPath: "/stores")
        let store = LogDataStore(path: "/stores/a", fileSystem: fs)
        try store.setup()
        try store.writeSync { try $0.insert(r(1)) }
        fs.holdNextUnlock()
        let tornDown = DispatchSemaphore(value: 0)
        let tearDownError = Mutex<(any Error)?>(nil)
        DispatchQueue.global().async {
            do { try store.tearDown() } catch { tearDownError.withLock { $0 = error } }
            tornDown.signal()
        }
        // tearDown() is now inside close(), the engine's lock not yet released.
        XCTAssertEqual(fs.unlockEntered.wait(timeout: .now() + 30), .success)
        let setupResult = Mutex<Result<Void, any Error>?>(nil)
        let setupDone = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            setupResult.withLock { $0 = Result { try store.setup() } }
            setupDone.signal()
        }
        // setup() must not fail with `.locked`: it either returns at once (ordered before the
        // tearDown) or waits for it and opens again. Let it get that far.
        let setupReturnedEarly = setupDone.wait(timeout: .now() + 0.2) == .success
        fs.releaseUnlock()
        XCTAssertEqual(tornDown.wait(timeout: .now() + 30), .success)
        if !setupReturnedEarly { XCTAssertEqual(setupDone.wait(timeout: .now() + 30), .success) }
        XCTAssertNil(tearDownError.withLock { $0 })
        switch setupResult.withLock({ $0 }) {
        case .failure(let e)?: XCTFail("setup() racing tearDown() failed: \(e)")
        case nil: XCTFail("setup() did not finish")
        case .success?: break
        }
        try store.setup()
        XCTAssertEqual(try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }, 1)
        try store.tearDown()
    }

    func testSetupAndTearDownOfSameStoreFromTwoThreadsNeverReportLocked() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-lifecycle-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = LogDataStore(directory: dir)
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 2) { worker in
            for _ in 0..<100 {
                do {
                    if worker == 0 { try store.setup() } else { try store.tearDown() }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        try store.tearDown()
    }

    func testSetupOnReadOnlyFileSystemSaysReadOnly() throws {
        guard let mount = TemporaryMount.tmpfs(size: "8m") else { throw XCTSkip("cannot mount a tmpfs here (needs root and mount(8))") }
        addTeardownBlock { mount.unmount() }
        let store = LogDataStore(directory: URL(fileURLWithPath: mount.path).appendingPathComponent("store"))
        try store.setup()
        try store.writeSync { try $0.insert(r(1)) }
        try store.tearDown()
        guard mount.remount(readOnly: true) else { throw XCTSkip("cannot remount \(mount.path) read-only") }
        do {
            try store.setup()
            XCTFail("setup() opened a store on a read-only file system")
            try? store.tearDown()
        } catch let e as LogStoreError {
            XCTAssertEqual(e.code, .permissionDenied)
            XCTAssertTrue(e.message.contains("read-only file system"), e.message)
            XCTAssertFalse(e.message.contains("owner and mode"), e.message)
        }
    }

    func testSetupOnReadOnlyDirectoryIsRefused() throws {
        guard getuid() != 0 else { throw XCTSkip("root may write to any directory; testSetupOnReadOnlyFileSystemSaysReadOnly covers root") }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-readonly-\(UUID().uuidString)")
        defer {
            chmod(dir.path, 0o755)
            try? FileManager.default.removeItem(at: dir)
        }
        let store = LogDataStore(directory: dir)
        try store.setup()
        try store.writeSync { try $0.insert(r(1)) }
        try store.tearDown()
        XCTAssertEqual(chmod(dir.path, 0o555), 0)
        do {
            try store.setup()
            XCTFail("setup() opened a store in a read-only directory")
            try? store.tearDown()
        } catch let e as LogStoreError {
            XCTAssertEqual(e.code, .permissionDenied)
            XCTAssertTrue(e.message.contains("not writable"), e.message)
        }
    }
}

/// Forwards to another file system; after ``holdNextUnlock()`` the next lock release blocks
/// (signalling ``unlockEntered``) until ``releaseUnlock()``: a `tearDown()` caught mid-close.
final class GatedLockFileSystem: FileSystem {
    let base: any FileSystem
    let armed = Mutex(false)
    let unlockEntered = DispatchSemaphore(value: 0)
    let gate = DispatchSemaphore(value: 0)
    init(_ base: any FileSystem) { self.base = base }
    func holdNextUnlock() { armed.withLock { $0 = true } }
    func releaseUnlock() { gate.signal() }

    func createDirectory(atPath path: String) throws { try base.createDirectory(atPath: path) }
    func contentsOfDirectory(atPath path: String) throws -> [String] { try base.contentsOfDirectory(atPath: path) }
    func itemKind(atPath path: String) -> FileItemKind? { base.itemKind(atPath: path) }
    func open(_ path: String, mode: FileOpenMode) throws -> any FileSystemFile { try base.open(path, mode: mode) }
    func removeFile(atPath path: String) throws { try base.removeFile(atPath: path) }
    func rename(from: String, to: String) throws { try base.rename(from: from, to: to) }
    func syncDirectory(atPath path: String) throws { try base.syncDirectory(atPath: path) }
    func lock(atPath path: String) throws -> any FileSystemLock { GatedLock(try base.lock(atPath: path), fs: self) }

    func willUnlock() {
        guard
            armed.withLock({ a in
                defer { a = false }
                return a
            })
        else { return }
        unlockEntered.signal()
        gate.wait()
    }
}

final class GatedLock: FileSystemLock {
    let base: any FileSystemLock
    let fs: GatedLockFileSystem
    init(_ base: any FileSystemLock, fs: GatedLockFileSystem) {
        self.base = base
        self.fs = fs
    }
    func unlock() {
        fs.willUnlock()
        base.unlock()
    }
}
