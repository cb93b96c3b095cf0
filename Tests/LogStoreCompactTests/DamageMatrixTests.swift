import Foundation
import LogStoreCompactCommands
import LogStoreEngine
import XCTest

/// The damage matrix (issue 19; Docs/Testing.md, "Damage matrix"): every file kind of a store with
/// several segments, each damaged in every way an operator, a disk or a copy tool can damage it,
/// after a clean close and after a kill -9. For every cell, a strict open either returns every
/// committed transaction or throws a typed error naming a file; it never opens with less, except
/// in the one cell kind no file can vouch for (the tail shortened after a kill -9, with no
/// checkpoint since), where it opens with a prefix of the log and never a wrong value. Where the
/// open refuses, `verify` reports damage too, and `salvage` opens and keeps only committed values.
///
/// One test per file kind; each runs its damages after both endings and names the failing cell.
final class DamageMatrixTests: XCTestCase {
    enum FileKind: String, CaseIterable {
        case manifest, tail, sealed, checkpoint, lock, tmp
    }

    enum Damage: String, CaseIterable {
        case deleted, truncatedTo0, truncatedToHalf, truncatedByOneByte, extendedWithZeros, extendedWithGarbage
        case randomBytesOfTheSameLength, sameFileFromAnotherStore, olderCopyOfItself
    }

    enum Ending: String, CaseIterable {
        /// `close()`: the log synced, a checkpoint written.
        case cleanClose
        /// What a kill -9 of a `.synchronous` store leaves: every commit synced, no checkpoint
        /// since the previous clean close (the files are those of a close without a checkpoint).
        case kill9
    }

    enum Outcome: Equatable {
        /// Opens with every committed transaction.
        case everything
        /// Throws `.corruption` (or another typed error) naming a file of the store.
        case refused
        /// Opens with a prefix of the log: undetectable (Docs/Design.md, failure table).
        case prefix
    }

    /// The expected outcome of a cell; the reasons are in Docs/Testing.md's matrix.
    static func expected(_ kind: FileKind, _ damage: Damage, _ ending: Ending) -> Outcome {
        switch kind {
        case .manifest:
            return .refused
        case .sealed:
            return .refused
        case .tail:
            switch damage {
            case .extendedWithZeros, .extendedWithGarbage: return .everything
            case .truncatedToHalf, .truncatedByOneByte, .olderCopyOfItself: return ending == .cleanClose ? .refused : .prefix
            default: return .refused
            }
        case .checkpoint, .lock, .tmp:
            return .everything
        }
    }

    // MARK: The store

    let root = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-matrix-\(UUID().uuidString)").path

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: root)
        super.tearDown()
    }

    static var options: LogStoreOptions {
        var o = LogStoreOptions()
        o.autoCompaction = false
        o.segmentSize = 64 << 10
        o.compression = false
        return o
    }

    /// Committed state: type "Item", key -> value.
    typealias Model = [RecordKey: [UInt8]]

    struct Store {
        var dir: String
        var model: Model
        /// A copy of the store after its first session (for "older copy" damages).
        var older: String
        /// The same workload in another store (another store id).
        var other: String
    }

    func item(_ i: Int) -> (RecordKey, [UInt8]) {
        (RecordKey(Array("item-\(i)".utf8)), AttributeValue.string(String(repeating: "v\(i)-", count: 60)).encoded())
    }

    /// Session 1: 20 transactions, clean close (a checkpoint). Copied as the older store. Session 2:
    /// 40 more transactions (several roll-overs), then the ending.
    func build(_ name: String, _ ending: Ending) throws -> (dir: String, model: Model, older: String) {
        let dir = root + "/" + name
        var model: Model = [:]
        var e = try LogEngine.open(directory: dir, options: Self.options)
        func commit(_ t: Int) throws {
            let ops: [RecordOperation] = (0..<10).map { j in
                let (k, v) = item(t * 10 + j)
                model[k] = v
                return .put(type: "Item", key: k, value: v)
            }
            try e.commit(ops)
        }
        for t in 0..<20 { try commit(t) }
        try e.close()
        let older = root + "/" + name + "-older"
        try FileManager.default.copyItem(atPath: dir, toPath: older)
        var o = Self.options
        o.checkpointOnClose = ending == .cleanClose
        e = try LogEngine.open(directory: dir, options: o)
        for t in 20..<60 { try commit(t) }
        XCTAssertGreaterThanOrEqual(e.manifestInfo.segments.count, 3, "several segments")
        try e.close()
        return (dir, model, older)
    }

    func makeStore(_ ending: Ending) throws -> Store {
        let name = "s-\(UUID().uuidString.prefix(8))"
        let (dir, model, older) = try build(name, ending)
        let (other, _, _) = try build(name + "-other", ending)
        return Store(dir: dir, model: model, older: older, other: other)
    }

    // MARK: Applying a damage

    func segments(_ dir: String) throws -> [UInt32] {
        let m = try ManifestFile.decode([UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/MANIFEST"))), path: dir)
        return m.segments
    }

    /// The file of `kind` in `dir` (creating the temporary file the tmp kind damages).
    func file(_ kind: FileKind, in dir: String) throws -> String {
        switch kind {
        case .manifest: return dir + "/MANIFEST"
        case .checkpoint: return dir + "/CHECKPOINT"
        case .lock: return dir + "/LOCK"
        case .tmp:
            let path = dir + "/MANIFEST.tmp"
            if !FileManager.default.fileExists(atPath: path) {
                try Data(try Data(contentsOf: URL(fileURLWithPath: dir + "/MANIFEST"))).write(to: URL(fileURLWithPath: path))
            }
            return path
        case .tail: return dir + "/" + LogStoreFormat.segmentFileName(try segments(dir).last ?? 1)
        case .sealed:
            let s = try segments(dir)
            return dir + "/" + LogStoreFormat.segmentFileName(s[s.count / 2 - (s.count > 2 ? 0 : 1)])
        }
    }

    func apply(_ damage: Damage, to path: String, store: Store) throws {
        let fm = FileManager.default
        let url = URL(fileURLWithPath: path)
        let bytes = [UInt8]((try? Data(contentsOf: url)) ?? Data())
        let name = (path as NSString).lastPathComponent
        var g = SystemRandomNumberGenerator()
        switch damage {
        case .deleted: try? fm.removeItem(atPath: path)
        case .truncatedTo0: try Data().write(to: url)
        case .truncatedToHalf: try Data(bytes.prefix(bytes.count / 2)).write(to: url)
        case .truncatedByOneByte: try Data(bytes.dropLast()).write(to: url)
        case .extendedWithZeros: try Data(bytes + [UInt8](repeating: 0, count: 1000)).write(to: url)
        case .extendedWithGarbage: try Data(bytes + (0..<1000).map { _ in UInt8.random(in: 0...255, using: &g) }).write(to: url)
        case .randomBytesOfTheSameLength: try Data((0..<max(bytes.count, 1)).map { _ in UInt8.random(in: 0...255, using: &g) }).write(to: url)
        case .sameFileFromAnotherStore, .olderCopyOfItself:
            let source = (damage == .olderCopyOfItself ? store.older : store.other) + "/" + name
            try? fm.removeItem(atPath: path)
            if fm.fileExists(atPath: source) { try fm.copyItem(atPath: source, toPath: path) }
        }
    }

    // MARK: Checking a cell

    func check(_ kind: FileKind, _ damage: Damage, _ ending: Ending) throws {
        let cell = "\(kind.rawValue) \(damage.rawValue) after \(ending.rawValue)"
        let store = try makeStore(ending)
        let path = try file(kind, in: store.dir)
        // An older copy of a file the older store did not have yet is a deletion.
        let older = store.older + "/" + (path as NSString).lastPathComponent
        let effective = damage == .olderCopyOfItself && !FileManager.default.fileExists(atPath: older) ? .deleted : damage
        try apply(damage, to: path, store: store)
        let expectation = Self.expected(kind, effective, ending)
        try checkOutcome(store, expectation, cell)
    }

    func checkOutcome(_ store: Store, _ expectation: Outcome, _ cell: String) throws {
        let opened: LogEngine
        do {
            opened = try LogEngine.open(directory: store.dir, options: Self.options)
        } catch let e as LogStoreError {
            XCTAssertEqual(expectation, .refused, "\(cell): refused unexpectedly: \(e)")
            XCTAssertNotNil(e.path, "\(cell): the error names a file: \(e)")
            let scan = try StoreScanner(directory: store.dir).scan()
            XCTAssertTrue(scan.hasDamage, "\(cell): verify reports damage too: \(scan.issues.map(\.message))")
            var salvage = Self.options
            salvage.recovery = .salvage
            if let s = try? LogEngine.open(directory: store.dir, options: salvage) {
                try checkSubset(s, store.model, cell + " (salvage)", prefix: false)
                try s.close()
            }
            return
        }
        defer { try? opened.close() }
        let found = try contents(opened)
        switch expectation {
        case .refused:
            XCTFail("\(cell): opened with \(found.count) of \(store.model.count) items instead of refusing")
        case .everything:
            XCTAssertEqual(found.count, store.model.count, "\(cell): every committed item")
            XCTAssertTrue(found == store.model, "\(cell): every committed value")
        case .prefix:
            try checkSubset(opened, store.model, cell, prefix: true)
        }
    }

    func contents(_ e: LogEngine) throws -> Model {
        var out: Model = [:]
        try e.snapshot().forEach(ofType: "Item") { k, v in
            out[k] = Array(v)
            return true
        }
        return out
    }

    /// What an open kept is committed data, value for value; with `prefix`, also a prefix of the
    /// log (which writes items in order, so a prefix of the items). Salvage keeps what survived,
    /// holes included.
    func checkSubset(_ e: LogEngine, _ model: Model, _ cell: String, prefix: Bool) throws {
        let found = try contents(e)
        for (k, v) in found { XCTAssertEqual(model[k], v, "\(cell): a value that was never committed") }
        guard prefix else { return }
        var i = 0
        while found[item(i).0] != nil { i += 1 }
        XCTAssertEqual(i, found.count, "\(cell): a prefix of the log, no holes")
    }

    func run(_ kind: FileKind) throws {
        for ending in Ending.allCases {
            for damage in Damage.allCases {
                try check(kind, damage, ending)
            }
        }
    }

    // MARK: The matrix, one test per file kind

    func testManifestDamage() throws { try run(.manifest) }
    func testTailSegmentDamage() throws { try run(.tail) }
    func testSealedSegmentDamage() throws { try run(.sealed) }
    func testCheckpointDamage() throws { try run(.checkpoint) }
    func testLockFileDamage() throws { try run(.lock) }
    func testTemporaryFileDamage() throws { try run(.tmp) }

    /// Two segment files swapped (a sealed one with the tail, two sealed ones): their headers name
    /// other numbers, so the open refuses, after either ending.
    func testTwoSegmentsSwapped() throws {
        for ending in Ending.allCases {
            for pair in ["sealed+tail", "sealed+sealed"] {
                let store = try makeStore(ending)
                let s = try segments(store.dir)
                let (a, b) = pair == "sealed+tail" ? (s[0], s[s.count - 1]) : (s[0], s[1])
                let pa = store.dir + "/" + LogStoreFormat.segmentFileName(a)
                let pb = store.dir + "/" + LogStoreFormat.segmentFileName(b)
                try FileManager.default.moveItem(atPath: pa, toPath: pa + ".swap")
                try FileManager.default.moveItem(atPath: pb, toPath: pa)
                try FileManager.default.moveItem(atPath: pa + ".swap", toPath: pb)
                try checkOutcome(store, .refused, "\(pair) swapped after \(ending.rawValue)")
            }
        }
    }
}
