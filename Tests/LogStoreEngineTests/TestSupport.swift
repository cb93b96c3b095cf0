import Foundation
import Synchronization
import XCTest
@_exported import _LogStoreTestSupport

@testable import LogStoreEngine

// Shared helpers for the engine tests: a harness that runs the same scenario on the real file
// system and on `InMemoryFileSystem`, raw file surgery through the `FileSystem` protocol (so it
// works on both), a reference model of store contents, and file-system wrappers that count syncs,
// run out of space, or forget unsynced bytes ("power loss").

// MARK: - Harness

/// Where a scenario runs: a file system and a root directory under which it makes stores.
final class StoreHarness: Sendable {
    let name: String
    let fs: any FileSystem
    let root: String
    private let counter = Mutex(0)

    init(name: String, fs: any FileSystem, root: String) {
        self.name = name
        self.fs = fs
        self.root = root
    }

    /// A fresh store path under the root (not created).
    func newStorePath(_ label: String = "store") -> String {
        let n = counter.withLock { c -> Int in
            c += 1
            return c
        }
        return _joinPath(root, "\(label)-\(n)")
    }

    /// A real temporary directory, removed when `test` finishes.
    static func posix(_ test: XCTestCase) -> StoreHarness {
        let root = NSTemporaryDirectory() + "logstore-engine-tests-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        test.addTeardownBlock { try? FileManager.default.removeItem(atPath: root) }
        return StoreHarness(name: "posix", fs: POSIXFileSystem(), root: root)
    }

    /// A fresh in-memory file system.
    static func memory() -> StoreHarness {
        let fs = InMemoryFileSystem()
        try? fs.createDirectory(atPath: "/stores")
        return StoreHarness(name: "memory", fs: fs, root: "/stores")
    }

    func open(_ dir: String, options: LogEngineOptions = LogEngineOptions.replayOnly) throws -> LogEngine {
        try LogEngine.open(directory: dir, fileSystem: fs, options: options)
    }
}

// MARK: - Keys, values, reference model

func key(_ s: String) -> RecordKey { RecordKey(Array(s.utf8)) }

/// A deterministic, compressible value of about `size` bytes for record `i`.
func sampleValue(_ i: Int, size: Int = 40) -> [UInt8] {
    var text = "record \(i): "
    while text.utf8.count < size { text += "lorem ipsum \(i % 7) " }
    return AttributeValue.map(["i": .int(Int64(i)), "text": .string(String(text.prefix(size)))]).encoded()
}

/// Store contents: type -> key -> value bytes.
typealias Contents = [String: [RecordKey: [UInt8]]]

/// Everything a reader sees.
func dump(_ r: some RecordReader) throws -> Contents {
    var out: Contents = [:]
    for t in try r.itemTypes {
        var m: [RecordKey: [UInt8]] = [:]
        try r.forEach(ofType: t) { k, v in
            m[k] = Array(v)
            return true
        }
        // Point reads must agree with the bulk scan.
        for k in try r.keys(ofType: t) {
            guard let v = try r.value(type: t, key: k) else {
                XCTFail("key \(k) of \(t) listed but has no value")
                continue
            }
            XCTAssertEqual(Array(v), m[k], "point read and scan disagree for \(t)/\(k)")
        }
        XCTAssertEqual(m.count, try r.count(ofType: t))
        if !m.isEmpty { out[t] = m }
    }
    return out
}

func dump(_ e: LogEngine) throws -> Contents { try dump(try e.snapshot()) }

/// Asserts two contents are equal, describing the first difference briefly (values can be large).
func assertSameContents(_ actual: Contents, _ expected: Contents, _ what: String = "", file: StaticString = #filePath, line: UInt = #line) {
    if actual == expected { return }
    var diff: [String] = []
    for t in Set(actual.keys).union(expected.keys).sorted() {
        let a = actual[t] ?? [:]
        let b = expected[t] ?? [:]
        let missing = Set(b.keys).subtracting(a.keys)
        let extra = Set(a.keys).subtracting(b.keys)
        let changed = Set(a.keys).intersection(b.keys).filter { a[$0] != b[$0] }
        if !missing.isEmpty { diff.append("\(t): \(missing.count) missing (e.g. \(missing.first!))") }
        if !extra.isEmpty { diff.append("\(t): \(extra.count) unexpected (e.g. \(extra.first!))") }
        if !changed.isEmpty { diff.append("\(t): \(changed.count) with other values (e.g. \(changed.first!))") }
    }
    XCTFail("contents differ: \(diff.joined(separator: "; ")). \(what)", file: file, line: line)
}

/// Applies operations to a reference model the way the engine does.
func apply(_ ops: [RecordOperation], to model: inout Contents) {
    for op in ops {
        switch op {
        case .put(let t, let k, let v): model[t, default: [:]][k] = v
        case .delete(let t, let k):
            model[t]?[k] = nil
            if model[t]?.isEmpty == true { model[t] = nil }
        case .deleteAll(let t): model[t] = nil
        }
    }
}

/// The operations of transaction number `n` of a deterministic workload: a few puts, sometimes a
/// delete of an earlier key, sometimes a delete-all of a scratch type.
func workloadTransaction(_ n: Int, puts: Int = 3, valueSize: Int = 40) -> [RecordOperation] {
    var ops: [RecordOperation] = []
    for j in 0..<puts {
        ops.append(.put(type: n % 2 == 0 ? "Even" : "Odd", key: key("k\(n)-\(j)"), value: sampleValue(n * 100 + j, size: valueSize)))
    }
    if n % 3 == 2 { ops.append(.delete(type: n % 2 == 0 ? "Odd" : "Even", key: key("k\(n - 1)-0"))) }
    if n % 5 == 4 {
        ops.append(.deleteAll(type: "Scratch"))
    } else {
        ops.append(.put(type: "Scratch", key: key("s\(n)"), value: [UInt8(n & 0xFF)]))
    }
    return ops
}

/// Commits `ops` through a write body (the public write path).
@discardableResult
func write(_ e: LogEngine, _ ops: [RecordOperation]) throws -> UInt64 {
    try e.write { t -> UInt64 in
        for op in ops {
            switch op {
            case .put(let ty, let k, let v): try t.put(type: ty, key: k, value: v)
            case .delete(let ty, let k): try t.delete(type: ty, key: k)
            case .deleteAll(let ty): try t.deleteAll(type: ty)
            }
        }
        return t.sequence + 1
    }
}

// MARK: - Errors

/// Asserts that `body` throws a `LogStoreError` with `code`; returns it for further checks.
@discardableResult
func assertThrowsLogStoreError<T>(
    _ code: LogStoreError.Code, _ what: String = "", file: StaticString = #filePath, line: UInt = #line,
    _ body: () throws -> T
) -> LogStoreError? {
    do {
        _ = try body()
        XCTFail("expected LogStoreError.\(code), nothing was thrown. \(what)", file: file, line: line)
        return nil
    } catch let e as LogStoreError {
        XCTAssertEqual(e.code, code, "wrong error code: \(e). \(what)", file: file, line: line)
        return e
    } catch {
        XCTFail("expected LogStoreError.\(code), got \(error). \(what)", file: file, line: line)
        return nil
    }
}

// MARK: - Raw file surgery (through the FileSystem protocol)

extension FileSystem {
    func readAll(_ path: String) throws -> [UInt8] {
        let f = try open(path, mode: .readOnly)
        defer { try? f.close() }
        return try f.read(at: 0, count: Int(try f.size()))
    }

    func writeAll(_ path: String, _ bytes: [UInt8]) throws {
        let f = try open(path, mode: .createOrTruncate)
        defer { try? f.close() }
        try f.write(bytes, at: 0)
    }

    func fileSize(_ path: String) throws -> UInt64 {
        let f = try open(path, mode: .readOnly)
        defer { try? f.close() }
        return try f.size()
    }

    func truncateFile(_ path: String, to size: UInt64) throws {
        let f = try open(path, mode: .readWrite)
        defer { try? f.close() }
        try f.truncate(to: size)
    }

    func appendBytes(_ path: String, _ bytes: [UInt8]) throws {
        let f = try open(path, mode: .readWrite)
        defer { try? f.close() }
        try f.write(bytes, at: try f.size())
    }

    /// XORs the byte at `offset` with `mask`.
    func flipByte(_ path: String, at offset: UInt64, mask: UInt8 = 0xFF) throws {
        let f = try open(path, mode: .readWrite)
        defer { try? f.close() }
        let b = try f.read(at: offset, count: 1)
        precondition(b.count == 1, "flipByte beyond the end of \(path)")
        try f.write([b[0] ^ mask], at: offset)
    }

    /// Copies every file of a store directory except its lock into a new directory.
    func copyStore(from: String, to: String) throws {
        try createDirectory(atPath: to)
        for name in try contentsOfDirectory(atPath: from) where name != LogStoreFormat.lockFileName {
            try writeAll(_joinPath(to, name), try readAll(_joinPath(from, name)))
        }
    }
}

func segmentPath(_ dir: String, _ n: UInt32) -> String { _joinPath(dir, LogStoreFormat.segmentFileName(n)) }
func manifestPath(_ dir: String) -> String { _joinPath(dir, LogStoreFormat.manifestFileName) }

/// One frame as found by walking a segment file from its header.
struct FrameInfo {
    var offset: Int
    var header: LogFrame.Header
    var end: Int { offset + LogFrame.headerSizeV2 + header.storedLength }
}

/// Walks the frames of a well-formed segment (of the version and kind its header says); fails
/// the test on anything unparsable.
func frames(ofSegment bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> [FrameInfo] {
    var out: [FrameInfo] = []
    bytes.withUnsafeBytes { buf in
        guard case .ok(let header) = SegmentHeader.decode(buf) else {
            XCTFail("unparsable segment header", file: file, line: line)
            return
        }
        var offset = SegmentHeader.sizeV2
        while offset < buf.count {
            guard case .frame(let h, _) = LogFrame.parse(buf, at: offset, version: header.version, compacted: header.isCompacted) else {
                XCTFail("unparsable frame at \(offset)", file: file, line: line)
                return
            }
            out.append(FrameInfo(offset: offset, header: h))
            offset += LogFrame.headerSizeV2 + h.storedLength
        }
    }
    return out
}

/// Rewrites MANIFEST with `change` applied (and a correct checksum).
func rewriteManifest(_ fs: any FileSystem, _ dir: String, _ change: (inout ManifestFile) -> Void) throws {
    let path = manifestPath(dir)
    var m = try ManifestFile.decode(try fs.readAll(path), path: path)
    change(&m)
    try fs.writeAll(path, m.encoded())
}

// MARK: - File-system wrappers

/// Forwards every call to `inner`, letting subclasses see file operations.
class WrappingFileSystem: FileSystem, @unchecked Sendable {
    // @unchecked Sendable: `inner` is immutable and Sendable; subclasses keep their own state
    // behind a Mutex.
    let inner: any FileSystem
    init(_ inner: any FileSystem) { self.inner = inner }

    func createDirectory(atPath path: String) throws { try inner.createDirectory(atPath: path) }
    func contentsOfDirectory(atPath path: String) throws -> [String] { try inner.contentsOfDirectory(atPath: path) }
    func itemKind(atPath path: String) -> FileItemKind? { inner.itemKind(atPath: path) }
    func open(_ path: String, mode: FileOpenMode) throws -> any FileSystemFile {
        WrappedFile(try inner.open(path, mode: mode), owner: self)
    }
    func removeFile(atPath path: String) throws { try inner.removeFile(atPath: path) }
    func rename(from: String, to: String) throws { try inner.rename(from: from, to: to) }
    func syncDirectory(atPath path: String) throws { try inner.syncDirectory(atPath: path) }
    func lock(atPath path: String) throws -> any FileSystemLock { try inner.lock(atPath: path) }

    /// Called before a file write; may throw or shorten the write (return the bytes to write).
    func willWrite(_ path: String, _ count: Int) throws -> Int { count }
    /// Called after a file sync.
    func didSync(_ path: String) {}
    /// Called before a file's sync; throwing fails the sync without syncing.
    func willSync(_ path: String) throws {}
    /// Called with the bytes a read returns; may change them (storage that reads back wrong).
    func didRead(_ path: String, at offset: UInt64, _ bytes: inout [UInt8]) {}
}

final class WrappedFile: FileSystemFile {
    let inner: any FileSystemFile
    let owner: WrappingFileSystem
    init(_ inner: any FileSystemFile, owner: WrappingFileSystem) {
        self.inner = inner
        self.owner = owner
    }
    var path: String { inner.path }
    func read(at offset: UInt64, count: Int) throws -> [UInt8] {
        var bytes = try inner.read(at: offset, count: count)
        owner.didRead(path, at: offset, &bytes)
        return bytes
    }
    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        let allowed = try owner.willWrite(path, bytes.count)
        if allowed < bytes.count {
            // Like a real full disk: part of the buffer lands, then the call fails.
            if allowed > 0 { try inner.write(UnsafeRawBufferPointer(rebasing: bytes[0..<allowed]), at: offset) }
            throw LogStoreError(.diskFull, "Simulated full disk.", path: path)
        }
        try inner.write(bytes, at: offset)
    }
    func size() throws -> UInt64 { try inner.size() }
    func truncate(to size: UInt64) throws { try inner.truncate(to: size) }
    func sync() throws {
        try owner.willSync(path)
        try inner.sync()
        owner.didSync(path)
    }
    func close() throws { try inner.close() }
}

/// Counts file syncs per path.
final class CountingFileSystem: WrappingFileSystem, @unchecked Sendable {
    // @unchecked Sendable: `syncs` is a Mutex.
    let syncs = Mutex<[String: Int]>([:])
    override func didSync(_ path: String) { syncs.withLock { $0[path, default: 0] += 1 } }
    /// Syncs of segment files (`*.log`).
    var segmentSyncs: Int { syncs.withLock { $0.filter { $0.key.hasSuffix(".log") }.values.reduce(0, +) } }
    func reset() { syncs.withLock { $0 = [:] } }
}

/// A disk that holds only `budget` more bytes of file writes once a budget is set.
final class DiskFullFileSystem: WrappingFileSystem, @unchecked Sendable {
    // @unchecked Sendable: `budget` is a Mutex.
    let budget = Mutex<Int?>(nil)
    override func willWrite(_ path: String, _ count: Int) throws -> Int {
        budget.withLock { b in
            guard let left = b else { return count }
            let n = min(left, count)
            b = left - n
            return n
        }
    }
}

// MARK: - Scenarios

/// Test scenarios written once against a `StoreHarness`, run by the POSIX test classes and again
/// by `InMemoryFileSystemTests`.
enum Scenarios {}

/// A workload's history: what the store must hold after each committed transaction, and where
/// each transaction's bytes landed.
struct History {
    struct Entry {
        var sequence: UInt64
        var ops: [RecordOperation]
        var segment: UInt32
        /// Byte range of the transaction's frames in `segment`.
        var start: UInt64
        var end: UInt64
    }
    var entries: [Entry] = []
    var model: Contents = [:]

    /// The contents made of every transaction for which `keep` is true.
    func contents(keeping keep: (Entry) -> Bool) -> Contents {
        var m = Contents()
        for e in entries where keep(e) { apply(e.ops, to: &m) }
        return m
    }
}

/// Commits `ops` and records where it landed (the tail's size before and after the write).
func writeRecording(_ e: LogEngine, _ ops: [RecordOperation], into history: inout History) throws {
    // The tail's append offset, not its file size (which preallocated zeros may extend).
    let before = e.state.withLock { $0.log.tailOffset }
    let segmentsBefore = e.manifestInfo.segments
    let seq = try write(e, ops)
    let segment = e.manifestInfo.segments.last ?? 0
    let after = e.state.withLock { $0.log.tailOffset }
    let start = segmentsBefore.last == segment ? before : UInt64(SegmentHeader.sizeV2)
    history.entries.append(.init(sequence: seq, ops: ops, segment: segment, start: start, end: after))
    apply(ops, to: &history.model)
}

/// Fails the `n`th directory sync from when `armed` is set (1 = the next one).
final class FailingDirectorySyncFileSystem: WrappingFileSystem, @unchecked Sendable {
    // @unchecked Sendable: `countdown` is a Mutex.
    let countdown = Mutex<Int?>(nil)
    override func syncDirectory(atPath path: String) throws {
        let fail = countdown.withLock { c -> Bool in
            guard let n = c else { return false }
            if n <= 1 {
                c = nil
                return true
            }
            c = n - 1
            return false
        }
        if fail { throw LogStoreError(.io, "Simulated failed directory fsync.", path: path) }
        try inner.syncDirectory(atPath: path)
    }
}

/// File syncs fail once `failing` is set.
final class FailingSyncFileSystem: WrappingFileSystem, @unchecked Sendable {
    // @unchecked Sendable: `failing` is a Mutex.
    let failing = Mutex(false)
    override func willSync(_ path: String) throws {
        if failing.withLock({ $0 }) { throw LogStoreError(.io, "Simulated fdatasync failure (EIO).", path: path) }
    }
}

/// A hand-made format 4 frame holding `ops` (their types defined in it, ids from `meta` on), of
/// `kind`, for tests that append frames a writer did not write.
func testFrame(
    _ ops: [RecordOperation], kind: LogFrame.Kind, sequence: UInt64, syncedThrough: UInt32 = 0, meta: MetaTable = MetaTable()
) -> [UInt8] {
    var o = LogEngineOptions.replayOnly
    o.maxFramePayload = 1 << 20
    // A clear store's encoding throws nothing (only a cipher can).
    return
        (try? TransactionEncoder.encode(
            ops, sequence: sequence, meta: meta, options: o, syncedThrough: syncedThrough, commit: kind == .commit))?
        .bytes ?? []
}

/// A format 4 frame whose payload is exactly `records` (`count` of them).
func testFrame(records: [UInt8], count: Int, kind: LogFrame.Kind, sequence: UInt64, syncedThrough: UInt32 = 0) -> [UInt8] {
    var out: [UInt8] = []
    records.withUnsafeBytes {
        _ = LogFrame.appendV4(into: &out, records: $0, recordCount: count, kind: kind, sequence: sequence, syncedThrough: syncedThrough)
    }
    return out
}
