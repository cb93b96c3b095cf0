#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension LogEngine {
    /// Refuses, at open, a store directory this process cannot create files in: a read-only
    /// mount (`EROFS`) or a directory whose mode or owner forbids writing (`EACCES`). Without it
    /// such a store opens, takes writes into the existing tail segment, and fails only at the
    /// first roll-over (and skips the close checkpoint). Called for `.strict` opens only: a
    /// `.salvage` open (the read-only CLI commands) never writes to the directory.
    ///
    /// Checks with `access(W_OK)` on ``POSIXFileSystem`` only; other file systems (in memory,
    /// test wrappers) have no permissions to check. Runs on the calling thread. Throws
    /// `.permissionDenied` naming the directory and saying which of the two it is.
    static func checkWritable(directory: String, _ fs: any FileSystem) throws {
        guard fs is POSIXFileSystem, access(directory, W_OK) != 0 else { return }
        let e = errno
        let cause = SystemError(call: "access", errno: e)
        switch e {
        case EROFS:
            throw LogStoreError(
                .permissionDenied,
                "The store directory is on a read-only file system. LogStore writes its log there: remount it read-write, or copy the store to a writable place.",
                path: directory, underlying: cause)
        case EACCES, EPERM:
            throw LogStoreError(
                .permissionDenied,
                "The store directory is not writable by this process. LogStore creates and renames files there: check the owner and mode of the directory.",
                path: directory, underlying: cause)
        default:
            throw _ioError("access", e, directory)
        }
    }
}
