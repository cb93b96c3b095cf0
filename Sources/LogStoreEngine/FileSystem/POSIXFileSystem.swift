import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The real file system, through POSIX calls: `open(O_CLOEXEC)`, `pread`/`pwrite`, `fdatasync`,
/// `rename`, `fsync` on directories and `flock` for the store lock.
///
/// `flock` is taken on descriptors opened for the lock alone (the `LOCK` file's and its
/// directory's), so it also excludes a second opener in the same process (POSIX `fcntl` record
/// locks would not), and deleting `LOCK` under an open store does not free it.
public struct POSIXFileSystem: FileSystem {
    /// Creates the file system. Stateless; cheap.
    public init() {}

    /// See ``FileSystem/createDirectory(atPath:)``.
    public func createDirectory(atPath path: String) throws {
        if itemKind(atPath: path) == .directory { return }
        var parent = path
        while parent.count > 1, parent.hasSuffix("/") { parent.removeLast() }
        if let slash = parent.lastIndex(of: "/"), slash != parent.startIndex {
            try createDirectory(atPath: String(parent[..<slash]))
        }
        if mkdir(path, 0o755) != 0 {
            let e = errno
            if e == EEXIST, itemKind(atPath: path) == .directory { return }
            throw _ioError("mkdir", e, path)
        }
    }

    /// See ``FileSystem/contentsOfDirectory(atPath:)``.
    public func contentsOfDirectory(atPath path: String) throws -> [String] {
        guard let dir = opendir(path) else { throw _ioError("opendir", errno, path) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw -> String in
                let bytes = raw.prefix { $0 != 0 }
                return String(decoding: bytes, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// See ``FileSystem/itemKind(atPath:)``.
    public func itemKind(atPath path: String) -> FileItemKind? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        switch st.st_mode & S_IFMT {
        case S_IFDIR: return .directory
        case S_IFREG: return .file
        default: return .file
        }
    }

    /// See ``FileSystem/open(_:mode:)``.
    public func open(_ path: String, mode: FileOpenMode) throws -> any FileSystemFile {
        let flags: Int32
        switch mode {
        case .readOnly: flags = O_RDONLY
        case .readWrite: flags = O_RDWR
        case .createNew: flags = O_RDWR | O_CREAT | O_EXCL
        case .createOrTruncate: flags = O_RDWR | O_CREAT | O_TRUNC
        }
        let fd = Glibc.open(path, flags | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw _ioError("open", errno, path) }
        return POSIXFile(fd: fd, path: path)
    }

    /// See ``FileSystem/removeFile(atPath:)``.
    public func removeFile(atPath path: String) throws {
        if unlink(path) != 0 {
            let e = errno
            if e == ENOENT { return }
            throw _ioError("unlink", e, path)
        }
    }

    /// See ``FileSystem/rename(from:to:)``.
    public func rename(from: String, to: String) throws {
        if Glibc.rename(from, to) != 0 { throw _ioError("rename", errno, from) }
    }

    /// See ``FileSystem/syncDirectory(atPath:)``.
    public func syncDirectory(atPath path: String) throws {
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw _ioError("open", errno, path) }
        defer { Glibc.close(fd) }
        if fsync(fd) != 0 { throw _ioError("fsync", errno, path) }
    }

    /// See ``FileSystem/lock(atPath:)``.
    ///
    /// Two `flock`s, both exclusive and non-blocking: first on the directory holding `path`
    /// (opened `O_RDONLY | O_DIRECTORY`), then on `path` itself. The directory's lock is the one
    /// that cannot be lost: deleting or replacing `LOCK` while a store is open gives the next
    /// opener a new inode to lock, but the same directory, so it still gets `.locked`. The lock
    /// on `path` stays for tools that lock `LOCK` by name (`flock(1)`, older LogStore versions).
    public func lock(atPath path: String) throws -> any FileSystemLock {
        let dirPath = LogEngine.parentDirectory(of: path)
        let dirFD = Glibc.open(dirPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dirFD >= 0 else { throw _ioError("open", errno, dirPath) }
        do {
            try Self.flockExclusive(dirFD, path: path)
        } catch {
            Glibc.close(dirFD)
            throw error
        }
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            let e = errno
            Glibc.close(dirFD)
            throw _ioError("open", e, path)
        }
        do {
            try Self.flockExclusive(fd, path: path)
        } catch {
            Glibc.close(fd)
            Glibc.close(dirFD)
            throw error
        }
        return POSIXLock(fds: [fd, dirFD])
    }

    /// `flock(LOCK_EX | LOCK_NB)`; `.locked` (naming the lock file `path`) if another holder has it.
    static func flockExclusive(_ fd: Int32, path: String) throws {
        guard flock(fd, LOCK_EX | LOCK_NB) != 0 else { return }
        let e = errno
        if e == EWOULDBLOCK || e == EAGAIN {
            throw LogStoreError(
                .locked,
                "The store is already open (another LogDataStore, in this process or another, holds its lock). Close it first, or open a different directory.",
                path: path, underlying: SystemError(call: "flock", errno: e))
        }
        throw _ioError("flock", e, path)
    }
}

/// An open POSIX descriptor. Sendable: the descriptor is immutable and `pread`/`pwrite` are
/// thread-safe; `closed` is guarded by its mutex.
final class POSIXFile: FileSystemFile {
    let fd: Int32
    let path: String
    private let closed = Mutex(false)

    init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { try? close() }

    fileprivate func checkOpen() throws {
        if closed.withLock({ $0 }) { throw LogStoreError(.io, "File used after close.", path: path) }
    }

    func read(at offset: UInt64, count: Int) throws -> [UInt8] {
        try checkOpen()
        guard count > 0 else { return [] }
        // Uninitialized: pread fills what it returns (zero-filling large reads first costs as much
        // as copying them).
        var failure: (any Error)? = nil
        let out = [UInt8](unsafeUninitializedCapacity: count) { buf, initialized in
            var done = 0
            defer { initialized = done }
            guard let base = buf.baseAddress else { return }
            while done < count {
                let n = pread(fd, base + done, count - done, off_t(offset) + off_t(done))
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = _ioError("pread", errno, path)
                    return
                }
                if n == 0 { break }
                done += n
            }
        }
        if let failure { throw failure }
        return out
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        try checkOpen()
        guard let base = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, base + done, bytes.count - done, off_t(offset) + off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw _ioError("pwrite", errno, path)
            }
            done += n
        }
    }

    #if os(Linux)
        typealias CopyFileRange =
            @convention(c) (Int32, UnsafeMutablePointer<off_t>?, Int32, UnsafeMutablePointer<off_t>?, Int, UInt32) -> Int
        /// glibc's `copy_file_range` (2.27 and later), looked up at run time: the Glibc module does
        /// not declare it (it needs `_GNU_SOURCE`). Nil where the C library lacks it.
        static let copyFileRange: CopyFileRange? = dlsym(nil, "copy_file_range").map { unsafeBitCast($0, to: CopyFileRange.self) }
        typealias SyncFileRange = @convention(c) (Int32, off_t, off_t, UInt32) -> Int32
        /// `sync_file_range` (looked up like `copy_file_range`), to start writing a copied chunk back
        /// at once (`SYNC_FILE_RANGE_WRITE`, 2): the final `fdatasync` then finds little left, and
        /// the disk sees a steady stream instead of one burst that stalls other files' syncs.
        static let syncFileRange: SyncFileRange? = dlsym(nil, "sync_file_range").map { unsafeBitCast($0, to: SyncFileRange.self) }
    #endif

    /// See ``FileSystemFile/copyBytes(from:at:count:to:chunk:copied:)``: `copy_file_range` on
    /// Linux when `source` is a POSIX file too (falling back to reads and writes where the
    /// kernel cannot, across file systems on old kernels for one); reads and writes elsewhere.
    func copyBytes(
        from source: any FileSystemFile, at sourceOffset: UInt64, count: UInt64, to offset: UInt64, chunk: Int,
        copied: (UInt64) -> Void
    ) throws -> UInt64 {
        var done: UInt64 = 0
        #if os(Linux)
            if let src = source as? POSIXFile {
                try checkOpen()
                try src.checkOpen()
                var inAt = off_t(sourceOffset)
                var outAt = off_t(offset)
                while done < count {
                    guard let copyFileRange = Self.copyFileRange else { break }
                    let n = copyFileRange(src.fd, &inAt, fd, &outAt, Int(min(UInt64(max(1, chunk)), count - done)), 0)
                    if n < 0 {
                        if errno == EINTR { continue }
                        if [EXDEV, ENOSYS, EOPNOTSUPP, EINVAL].contains(errno) { break }
                        throw _ioError("copy_file_range", errno, path)
                    }
                    if n == 0 { return done }
                    // Write-behind (advice only: a failure changes nothing, the caller syncs).
                    _ = Self.syncFileRange?(fd, outAt - off_t(n), off_t(n), 2)
                    done += UInt64(n)
                    copied(UInt64(n))
                }
                if done == count { return done }
            }
        #endif
        return try done
            + copyByReading(from: source, at: sourceOffset + done, count: count - done, to: offset + done, chunk: chunk, copied: copied)
    }

    func size() throws -> UInt64 {
        try checkOpen()
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw _ioError("fstat", errno, path) }
        return UInt64(st.st_size)
    }

    func truncate(to size: UInt64) throws {
        try checkOpen()
        if ftruncate(fd, off_t(size)) != 0 { throw _ioError("ftruncate", errno, path) }
    }

    func sync() throws {
        try checkOpen()
        if fdatasync(fd) != 0 { throw _ioError("fdatasync", errno, path) }
    }

    func close() throws {
        let wasOpen = closed.withLock { c -> Bool in
            defer { c = true }
            return !c
        }
        if wasOpen { Glibc.close(fd) }
    }
}

/// Held `flock`s (the lock file's and its directory's). Sendable: `fds` is guarded by the mutex.
final class POSIXLock: FileSystemLock {
    private let fds: Mutex<[Int32]>
    init(fds: [Int32]) { self.fds = Mutex(fds) }
    deinit { unlock() }
    func unlock() {
        fds.withLock { fds in
            for fd in fds {
                flock(fd, LOCK_UN)
                Glibc.close(fd)
            }
            fds = []
        }
    }
}

/// Maps an `errno` to a typed ``LogStoreError``.
func _ioError(_ call: String, _ e: Int32, _ path: String) -> LogStoreError {
    let cause = SystemError(call: call, errno: e)
    switch e {
    case ENOSPC, EDQUOT:
        return LogStoreError(
            .diskFull, "The disk is full (\(call)). Nothing committed was lost; free space and retry.", path: path, underlying: cause)
    case EROFS:
        return LogStoreError(
            .permissionDenied,
            "The file system is read-only (\(call)): LogStore writes its log in the store directory. Remount it read-write, or copy the store to a writable place.",
            path: path, underlying: cause)
    case EACCES, EPERM:
        return LogStoreError(
            .permissionDenied, "Permission denied (\(call)). Check the owner and mode of the store directory.", path: path,
            underlying: cause)
    default:
        return LogStoreError(.io, "\(call) failed: \(_systemErrorText(e)).", path: path, underlying: cause)
    }
}

/// `strerror` text for an errno.
func _systemErrorText(_ e: Int32) -> String {
    guard let s = strerror(e) else { return "errno \(e)" }
    return String(cString: s)
}
