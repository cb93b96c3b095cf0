import Foundation
import LogStore

/// The lock that keeps one `SQLiteDataStore` per file (DataStore contract: one open store per
/// place), in this process or another: `flock(LOCK_EX | LOCK_NB)` on `<file>-lock` next to the
/// database, held while the store is set up. Advisory: other SQLite programs (the `sqlite3`
/// shell) ignore it and get SQLite's own locking.
///
/// `@unchecked Sendable`: `fd` is set once in `init` and only closed by `unlock()`, which the
/// owner calls once (under its lifecycle lock).
final class SQLiteFileLock: @unchecked Sendable {
    let path: String
    private var fd: Int32

    /// Takes the lock of the store at `databasePath`. Throws `.locked` if another store holds
    /// it, `.permissionDenied`/`.io` if the lock file cannot be opened.
    init(databasePath: String) throws {
        path = databasePath + "-lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            let e = errno
            let code: LogStoreError.Code = (e == EACCES || e == EPERM || e == EROFS) ? .permissionDenied : .io
            throw LogStoreError(
                code,
                "Cannot open the store's lock file (\(String(cString: strerror(e)))). Check that its directory exists and is writable.",
                path: path, underlying: SystemError(call: "open", errno: e))
        }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            close(fd)
            if e == EWOULDBLOCK || e == EAGAIN {
                throw LogStoreError(
                    .locked,
                    "The SQLite store is already open (another SQLiteDataStore, in this process or another, holds its lock). Close it first, or open another file.",
                    path: path, underlying: SystemError(call: "flock", errno: e))
            }
            throw LogStoreError(
                .io, "Cannot lock the store (\(String(cString: strerror(e)))).", path: path,
                underlying: SystemError(call: "flock", errno: e))
        }
        self.fd = fd
    }

    /// Releases the lock. Idempotent.
    func unlock() {
        guard fd >= 0 else { return }
        close(fd)
        fd = -1
    }

    deinit { unlock() }
}
