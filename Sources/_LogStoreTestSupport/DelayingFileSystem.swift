import Foundation
public import LogStoreEngine

/// A ``FileSystem`` that forwards every call to another one and, after each mutating operation
/// (create, write, truncate, sync, directory sync, rename, remove, lock), sleeps for a random
/// time up to ``maxDelayMicroseconds``: a slow disk.
///
/// The kill -9 driver runs some workers on it so that the time between two I/O operations of a
/// commit (an append and its fdatasync, the two halves of a roll-over) is long enough for a
/// SIGKILL to land there, as it would on a slow device. It changes no results, only timing.
///
/// Thread-safe: immutable; the random delays come from the system generator.
public final class DelayingFileSystem: FileSystem {
    /// The file system doing the work.
    public let base: any FileSystem
    /// The longest sleep after a mutating operation, in microseconds.
    public let maxDelayMicroseconds: UInt32

    /// Wraps `base`, sleeping up to `maxDelayMicroseconds` after each mutating operation.
    public init(_ base: any FileSystem, maxDelayMicroseconds: UInt32) {
        self.base = base
        self.maxDelayMicroseconds = maxDelayMicroseconds
    }

    func pause() {
        guard maxDelayMicroseconds > 0 else { return }
        usleep(UInt32.random(in: 0...maxDelayMicroseconds))
    }

    /// Forwards, then pauses.
    public func createDirectory(atPath path: String) throws {
        defer { pause() }
        try base.createDirectory(atPath: path)
    }

    /// Forwards.
    public func contentsOfDirectory(atPath path: String) throws -> [String] {
        try base.contentsOfDirectory(atPath: path)
    }

    /// Forwards.
    public func itemKind(atPath path: String) -> FileItemKind? {
        base.itemKind(atPath: path)
    }

    /// Forwards (pausing after a creating open); the file's writes, truncations and syncs pause too.
    public func open(_ path: String, mode: FileOpenMode) throws -> any FileSystemFile {
        let f = try base.open(path, mode: mode)
        if mode == .createNew || mode == .createOrTruncate { pause() }
        return DelayingFile(base: f, fs: self)
    }

    /// Forwards, then pauses.
    public func removeFile(atPath path: String) throws {
        defer { pause() }
        try base.removeFile(atPath: path)
    }

    /// Forwards, then pauses.
    public func rename(from: String, to: String) throws {
        defer { pause() }
        try base.rename(from: from, to: to)
    }

    /// Forwards, then pauses.
    public func syncDirectory(atPath path: String) throws {
        defer { pause() }
        try base.syncDirectory(atPath: path)
    }

    /// Forwards, then pauses.
    public func lock(atPath path: String) throws -> any FileSystemLock {
        defer { pause() }
        return try base.lock(atPath: path)
    }
}

/// A file of a ``DelayingFileSystem``. Sendable: immutable references to Sendable objects.
final class DelayingFile: FileSystemFile {
    let base: any FileSystemFile
    let fs: DelayingFileSystem

    init(base: any FileSystemFile, fs: DelayingFileSystem) {
        self.base = base
        self.fs = fs
    }

    var path: String { base.path }

    func read(at offset: UInt64, count: Int) throws -> [UInt8] {
        try base.read(at: offset, count: count)
    }

    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        defer { fs.pause() }
        try base.write(bytes, at: offset)
    }

    func size() throws -> UInt64 {
        try base.size()
    }

    func truncate(to size: UInt64) throws {
        defer { fs.pause() }
        try base.truncate(to: size)
    }

    func sync() throws {
        defer { fs.pause() }
        try base.sync()
    }

    func close() throws {
        try base.close()
    }
}
