/// The engine's only door to files. Every byte the engine reads or writes goes through a
/// `FileSystem`, so tests can substitute an in-memory or a fault-injecting implementation.
///
/// Implementations: ``POSIXFileSystem`` (real files), ``InMemoryFileSystem`` (the in-memory
/// store), and `_LogStoreTestSupport.FaultInjectingFileSystem` (crash simulation).
///
/// Contract: paths are absolute, `/`-separated strings. Every method may be called from any
/// thread. Errors are ``LogStoreError``s with code `.io`, `.diskFull`, `.permissionDenied` or
/// `.locked`, naming the path.
public protocol FileSystem: Sendable {
    /// Creates the directory and any missing parents. No error if it exists.
    func createDirectory(atPath path: String) throws
    /// The names (not paths) of the entries in a directory, in no particular order.
    func contentsOfDirectory(atPath path: String) throws -> [String]
    /// What is at `path`, or nil if nothing is.
    func itemKind(atPath path: String) -> FileItemKind?
    /// Opens (and in the creating modes, creates) a file.
    func open(_ path: String, mode: FileOpenMode) throws -> any FileSystemFile
    /// Removes a file. No error if it is already gone.
    func removeFile(atPath path: String) throws
    /// Atomically renames `from` to `to`, replacing `to`. Durable only after `syncDirectory`.
    func rename(from: String, to: String) throws
    /// Makes the directory's entries (creations, renames, removals) durable (`fsync` on the dir).
    func syncDirectory(atPath path: String) throws
    /// Takes an exclusive, non-blocking lock on `path` (created if missing). Throws `.locked` if
    /// another holder (this process or another) has it. The lock lasts until `unlock()` or until
    /// the returned object is deinitialized, and removing or replacing the file at `path` while
    /// it is held must not release it (a later `lock(atPath:)` on the same path still throws).
    func lock(atPath path: String) throws -> any FileSystemLock
}

/// What a path names.
public enum FileItemKind: Sendable, Equatable {
    /// A regular file.
    case file
    /// A directory.
    case directory
}

/// How ``FileSystem/open(_:mode:)`` opens a file.
public enum FileOpenMode: Sendable, Equatable {
    /// Read only; the file must exist.
    case readOnly
    /// Read and write; the file must exist.
    case readWrite
    /// Read and write; creates an empty file, failing if one exists.
    case createNew
    /// Read and write; creates the file or truncates an existing one to zero bytes.
    case createOrTruncate
}

/// An open file. Reads and writes are positional (`pread`/`pwrite`) so they may run concurrently
/// from several threads. Valid until ``close()`` or deinitialization (which closes it).
public protocol FileSystemFile: AnyObject, Sendable {
    /// The path this file was opened at.
    var path: String { get }
    /// Reads up to `count` bytes at `offset`; returns fewer only at end of file.
    func read(at offset: UInt64, count: Int) throws -> [UInt8]
    /// Writes all of `bytes` at `offset`, extending the file as needed.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws
    /// The file's current size in bytes.
    func size() throws -> UInt64
    /// Cuts or extends the file to `size` bytes.
    func truncate(to size: UInt64) throws
    /// Makes the file's data durable (`fdatasync`). A failure means data may be lost: callers must
    /// not retry and pretend it worked.
    func sync() throws
    /// Closes the file. Later calls throw. Idempotent.
    func close() throws
    /// Copies `count` bytes of `source` from `sourceOffset` into this file at `offset`, at most
    /// `chunk` bytes at a time, calling `copied` with each piece's size; returns the bytes copied
    /// (fewer only when `source` ends first). Runs on the calling thread. Throws either file's
    /// I/O errors. The default reads and writes through these two objects; the POSIX file system
    /// copies inside the kernel (`copy_file_range`, one copy of each byte instead of two) when
    /// both files are its own. Nothing is synced.
    func copyBytes(
        from source: any FileSystemFile, at sourceOffset: UInt64, count: UInt64, to offset: UInt64, chunk: Int,
        copied: (UInt64) -> Void
    ) throws -> UInt64
}

extension FileSystemFile {
    /// Writes all of `bytes` at `offset`.
    public func write(_ bytes: [UInt8], at offset: UInt64) throws {
        try bytes.withUnsafeBytes { try write($0, at: offset) }
    }

    /// See ``FileSystemFile/copyBytes(from:at:count:to:chunk:copied:)``: reads `source` and
    /// writes this file, a chunk at a time.
    public func copyBytes(
        from source: any FileSystemFile, at sourceOffset: UInt64, count: UInt64, to offset: UInt64, chunk: Int,
        copied: (UInt64) -> Void
    ) throws -> UInt64 {
        try copyByReading(from: source, at: sourceOffset, count: count, to: offset, chunk: chunk, copied: copied)
    }

    /// The default ``copyBytes(from:at:count:to:chunk:copied:)``, for implementations that fall
    /// back to it.
    func copyByReading(
        from source: any FileSystemFile, at sourceOffset: UInt64, count: UInt64, to offset: UInt64, chunk: Int,
        copied: (UInt64) -> Void
    ) throws -> UInt64 {
        var done: UInt64 = 0
        while done < count {
            let bytes = try source.read(at: sourceOffset + done, count: Int(min(UInt64(max(1, chunk)), count - done)))
            if bytes.isEmpty { break }
            try write(bytes, at: offset + done)
            done += UInt64(bytes.count)
            copied(UInt64(bytes.count))
        }
        return done
    }
}

/// A held exclusive lock on a file; see ``FileSystem/lock(atPath:)``.
public protocol FileSystemLock: AnyObject, Sendable {
    /// Releases the lock. Idempotent.
    func unlock()
}

/// Joins path components with `/`.
@inlinable
public func _joinPath(_ dir: String, _ name: String) -> String {
    dir.hasSuffix("/") ? dir + name : dir + "/" + name
}
