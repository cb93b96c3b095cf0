import Foundation
import Synchronization
import XCTest
import _LogStoreTestSupport

@testable import LogStoreEngine

/// Deterministic pseudo-random numbers so failures reproduce: the one SplitMix64 of test support.
typealias CTRandom = SplitMix64

/// Helpers of the compaction and checkpoint tests (a namespace, to stay clear of other test files).
enum CT {
    /// What a store should contain: type -> key -> value.
    typealias Model = [String: [RecordKey: [UInt8]]]

    static func key(_ i: Int) -> RecordKey { RecordKey(Array("k\(i)".utf8)) }

    /// Every record the engine's latest snapshot shows.
    static func contents(_ e: LogEngine) throws -> Model {
        try contents(e.snapshot())
    }

    static func contents(_ s: EngineSnapshot) throws -> Model {
        var out: Model = [:]
        for t in s.itemTypes {
            var d: [RecordKey: [UInt8]] = [:]
            try s.forEach(ofType: t) { k, v in
                d[k] = Array(v)
                return true
            }
            out[t] = d
        }
        return out
    }

    /// Bytes of every segment file of a store on `fs`.
    static func segmentBytes(_ fs: any FileSystem, _ dir: String) throws -> UInt64 {
        var total: UInt64 = 0
        for name in try fs.contentsOfDirectory(atPath: dir) where LogStoreFormat.segmentNumber(fromFileName: name) != nil {
            let f = try fs.open(_joinPath(dir, name), mode: .readOnly)
            total += try f.size()
            try f.close()
        }
        return total
    }

    static func segmentFiles(_ fs: any FileSystem, _ dir: String) throws -> [UInt32] {
        try fs.contentsOfDirectory(atPath: dir).compactMap(LogStoreFormat.segmentNumber(fromFileName:)).sorted()
    }

    static func readFile(_ fs: any FileSystem, _ path: String) throws -> [UInt8] {
        let f = try fs.open(path, mode: .readOnly)
        defer { try? f.close() }
        return try f.read(at: 0, count: Int(try f.size()))
    }

    static func writeFile(_ fs: any FileSystem, _ path: String, _ bytes: [UInt8]) throws {
        let f = try fs.open(path, mode: .createOrTruncate)
        try f.write(bytes, at: 0)
        try f.close()
    }

    /// Options for small, fast test stores: 64 KiB segments, no background work unless asked.
    static func smallOptions() -> LogEngineOptions {
        var o = LogEngineOptions()
        o.segmentSize = 64 << 10
        o.durability = .none
        o.autoCompaction = false
        o.checkpointInterval = 0
        return o
    }
}

/// A file system that forwards to another until a budget of mutating operations (mkdir, open for
/// writing, write, truncate, sync, rename, remove, directory sync) is spent, then fails every one
/// of them: a process crash at that point, as the files see it (nothing after it happens).
final class CTCrashingFileSystem: FileSystem {
    let base: any FileSystem
    /// Operations left before the crash; nil = never crash.
    let budget = Mutex<Int?>(nil)
    let crashed = Mutex(false)

    init(_ base: any FileSystem) { self.base = base }

    func arm(after n: Int) { budget.withLock { $0 = n } }

    func spend(_ what: String, _ path: String) throws {
        let ok = budget.withLock { b -> Bool in
            guard let left = b else { return true }
            if left <= 0 { return false }
            b = left - 1
            return true
        }
        if !ok {
            crashed.withLock { $0 = true }
            throw LogStoreError(.io, "simulated crash before \(what)", path: path)
        }
    }

    func createDirectory(atPath path: String) throws {
        try spend("mkdir", path)
        try base.createDirectory(atPath: path)
    }
    func contentsOfDirectory(atPath path: String) throws -> [String] { try base.contentsOfDirectory(atPath: path) }
    func itemKind(atPath path: String) -> FileItemKind? { base.itemKind(atPath: path) }
    func open(_ path: String, mode: FileOpenMode) throws -> any FileSystemFile {
        if mode != .readOnly { try spend("open", path) }
        return CTCrashingFile(try base.open(path, mode: mode), fs: self)
    }
    func removeFile(atPath path: String) throws {
        try spend("remove", path)
        try base.removeFile(atPath: path)
    }
    func rename(from: String, to: String) throws {
        try spend("rename", from)
        try base.rename(from: from, to: to)
    }
    func syncDirectory(atPath path: String) throws {
        try spend("syncDirectory", path)
        try base.syncDirectory(atPath: path)
    }
    func lock(atPath path: String) throws -> any FileSystemLock { try base.lock(atPath: path) }
}

final class CTCrashingFile: FileSystemFile {
    let inner: any FileSystemFile
    let fs: CTCrashingFileSystem
    init(_ inner: any FileSystemFile, fs: CTCrashingFileSystem) {
        self.inner = inner
        self.fs = fs
    }
    var path: String { inner.path }
    func read(at offset: UInt64, count: Int) throws -> [UInt8] { try inner.read(at: offset, count: count) }
    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        try fs.spend("write", path)
        try inner.write(bytes, at: offset)
    }
    func size() throws -> UInt64 { try inner.size() }
    func truncate(to size: UInt64) throws {
        try fs.spend("truncate", path)
        try inner.truncate(to: size)
    }
    func sync() throws {
        try fs.spend("sync", path)
        try inner.sync()
    }
    func close() throws { try inner.close() }
}

/// A file system that runs `hook` (once) when a file whose name passes `filter` is synced: a
/// way to act at a precise point inside an engine operation.
final class CTHookFileSystem: WrappingFileSystem, @unchecked Sendable {
    // @unchecked Sendable: `hook` is a Mutex and `filter` is immutable and Sendable.
    let hook = Mutex<(@Sendable (String) -> Void)?>(nil)
    let filter: @Sendable (String) -> Bool
    init(_ base: any FileSystem, filter: @escaping @Sendable (String) -> Bool) {
        self.filter = filter
        super.init(base)
    }
    override func didSync(_ path: String) {
        guard filter(path),
            let h = hook.withLock({ h -> (@Sendable (String) -> Void)? in
                defer { h = nil }
                return h
            })
        else { return }
        h(path)
    }
}
