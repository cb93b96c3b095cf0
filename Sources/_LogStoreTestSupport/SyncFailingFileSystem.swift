public import LogStoreEngine
import Synchronization

/// A file system over another whose file syncs fail once ``failSyncs`` is set: the way to poison a
/// store (a failed `fdatasync`) in tests of what a poisoned store does to its users (observers,
/// queued writes). Everything else is passed through.
public final class SyncFailingFileSystem: FileSystem {
    let inner: any FileSystem
    let failing = Mutex(false)

    /// Wraps `inner` (an `InMemoryFileSystem` or a real one).
    public init(_ inner: any FileSystem) { self.inner = inner }

    /// From now on every file sync throws `.io` (so a synchronous commit poisons the store).
    public func failSyncs() { failing.withLock { $0 = true } }

    /// See `FileSystem`.
    public func createDirectory(atPath path: String) throws { try inner.createDirectory(atPath: path) }
    /// See `FileSystem`.
    public func contentsOfDirectory(atPath path: String) throws -> [String] { try inner.contentsOfDirectory(atPath: path) }
    /// See `FileSystem`.
    public func itemKind(atPath path: String) -> FileItemKind? { inner.itemKind(atPath: path) }
    /// See `FileSystem`.
    public func open(_ path: String, mode: FileOpenMode) throws -> any FileSystemFile {
        File(inner: try inner.open(path, mode: mode), owner: self)
    }
    /// See `FileSystem`.
    public func removeFile(atPath path: String) throws { try inner.removeFile(atPath: path) }
    /// See `FileSystem`.
    public func rename(from: String, to: String) throws { try inner.rename(from: from, to: to) }
    /// See `FileSystem`.
    public func syncDirectory(atPath path: String) throws { try inner.syncDirectory(atPath: path) }
    /// See `FileSystem`.
    public func lock(atPath path: String) throws -> any FileSystemLock { try inner.lock(atPath: path) }

    final class File: FileSystemFile {
        let inner: any FileSystemFile
        let owner: SyncFailingFileSystem
        init(inner: any FileSystemFile, owner: SyncFailingFileSystem) {
            self.inner = inner
            self.owner = owner
        }
        var path: String { inner.path }
        func read(at offset: UInt64, count: Int) throws -> [UInt8] { try inner.read(at: offset, count: count) }
        func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws { try inner.write(bytes, at: offset) }
        func size() throws -> UInt64 { try inner.size() }
        func truncate(to size: UInt64) throws { try inner.truncate(to: size) }
        func sync() throws {
            if owner.failing.withLock({ $0 }) { throw LogStoreError(.io, "Simulated fdatasync failure (EIO).", path: path) }
            try inner.sync()
        }
        func close() throws { try inner.close() }
    }
}
