import Foundation
import XCTest

@testable import LogStoreEngine

/// Run files (``RunWriter``, ``MappedRun``, ``RunCursor``, ``RunValidator``) against a sorted
/// array: every layout and kind, page and level boundaries, shared prefixes and overflow keys;
/// lookups, ranks, cursors forward and backward from any key or offset; damage found lazily.
final class RunFileTests: XCTestCase {
    static let store = StoreID(bytes: Array(0..<16))

    struct Model {
        var entries: [(key: [UInt8], payload: [UInt8])]
        var kind: RunKind
    }

    func location(_ i: Int) -> RecordLocation {
        let segment = UInt32(i % 7 + 1)
        let sequence = UInt64(i + 1)
        guard i % 2 == 0 else {
            return RecordLocation(
                segment: segment, frameOffset: UInt32(i * 3), valueOffset: UInt32(i % 5), valueLength: 9, sequence: sequence)
        }
        return RecordLocation(segment: segment, offset: UInt32(i * 3), length: 40, sequence: sequence)
    }

    /// Random distinct keys of the layout, sorted.
    func keys(_ n: Int, layout: RunLayout, rng: inout SplitMix64, long: Bool = false) -> [[UInt8]] {
        var set = Set<[UInt8]>()
        while set.count < n {
            switch layout {
            case .fixed8: set.insert((0..<8).map { i in i < 5 ? UInt8(rng.next() % 2) : UInt8(truncatingIfNeeded: rng.next()) })
            case .fixed16: set.insert((0..<16).map { i in i < 12 ? UInt8(rng.next() % 2) : UInt8(truncatingIfNeeded: rng.next()) })
            case .variable:
                let length: Int
                switch rng.next() % 10 {
                case 0: length = long ? 1024 + Int(rng.next() % 3000) : 40
                case 1: length = Int(rng.next() % 3)
                default: length = 3 + Int(rng.next() % 30)
                }
                // A shared leading part, so pages have prefixes.
                let shared: [UInt8] = rng.next() % 2 == 0 ? [7, 7, 7, 7] : [7, 8]
                set.insert(Array((shared + (0..<length).map { _ in UInt8(rng.next() % 4) }).prefix(max(length, 1))))
            }
        }
        return set.sorted { $0.lexicographicallyPrecedes($1) }
    }

    func payload(_ kind: RunKind, _ i: Int, rng: inout SplitMix64) -> [UInt8] {
        switch kind {
        case .primaryBase: return RunLocationCoding.bytes(location(i))
        case .primaryDelta:
            let change: UInt8 = [0, RunChange.tombstone, RunChange.newKey][Int(rng.next() % 3)]
            return [change] + RunLocationCoding.bytes(location(i))
        case .secondaryBase: return []
        case .secondaryDelta: return [rng.next() % 2 == 0 ? RunChange.tombstone : RunChange.newKey]
        }
    }

    func build(_ model: Model, layout: RunLayout, flags: UInt16 = 0) throws -> MappedRun {
        let sink = RunMemorySink()
        let writer = RunWriter(
            header: RunHeader(storeId: Self.store, runNumber: 7, kind: model.kind, layout: layout, sequence: 99, flags: flags), sink: sink)
        for e in model.entries {
            try e.key.withUnsafeBytes { k in try e.payload.withUnsafeBytes { try writer.append(key: k, payload: $0) } }
        }
        let header = try writer.finish()
        XCTAssertEqual(header.entryCount, UInt64(model.entries.count))
        return try MappedRun(data: RunBytes(copying: sink.bytes), path: "/run")
    }

    func contribution(_ model: Model, _ i: Int) -> Int {
        model.kind.isDelta ? (RunChange.contribution(model.entries[i].payload[0]) ?? 0) : 1
    }

    /// Everything a run answers, against the model.
    func check(_ run: MappedRun, _ model: Model, rng: inout SplitMix64, _ what: String) throws {
        let summary = try RunValidator.validate(run)
        XCTAssertEqual(summary.entries, model.entries.count, what)
        let net = model.entries.indices.reduce(0) { $0 + contribution(model, $1) }
        XCTAssertEqual(run.netCount, net, what)
        // Iteration, both directions.
        var forward: [[UInt8]] = []
        let c = try run.cursor(from: nil)
        while c.isValid {
            forward.append(Array(c.key))
            XCTAssertEqual(
                Array(UnsafeRawBufferPointer(start: c.payload, count: model.kind.payloadSize)), model.entries[forward.count - 1].payload)
            try c.next()
        }
        XCTAssertEqual(forward, model.entries.map(\.key), "\(what): forward")
        var backward: [[UInt8]] = []
        let b = try run.cursor(below: nil)
        while b.isValid {
            backward.append(Array(b.key))
            try b.previous()
        }
        XCTAssertEqual(backward, model.entries.map(\.key).reversed(), "\(what): backward")
        // Probes: present keys, absent keys, keys of other lengths.
        var sums = [0]
        for i in model.entries.indices { sums.append(sums[i] + contribution(model, i)) }
        for _ in 0..<200 {
            var probe: [UInt8]
            if !model.entries.isEmpty && rng.next() % 2 == 0 {
                probe = model.entries[Int(rng.next() % UInt64(model.entries.count))].key
                if rng.next() % 3 == 0 { probe.append(0) }
                if rng.next() % 3 == 0, !probe.isEmpty { probe.removeLast() }
            } else {
                probe = (0..<Int(rng.next() % 20)).map { _ in UInt8(rng.next() % 9) }
            }
            let lower = model.entries.partitioningIndex { !$0.key.lexicographicallyPrecedes(probe) }
            let found = try probe.withUnsafeBytes { try run.find($0) }
            let present = lower < model.entries.count && model.entries[lower].key == probe
            XCTAssertEqual(found != nil, present, "\(what): find")
            if let found, present {
                XCTAssertEqual(Array(UnsafeRawBufferPointer(start: found, count: model.kind.payloadSize)), model.entries[lower].payload)
            }
            let expectedRank = sums[lower]
            XCTAssertEqual(try probe.withUnsafeBytes { try run.rank(of: $0) }, expectedRank, "\(what): rank")
            let from = try probe.withUnsafeBytes { try run.cursor(from: $0) }
            XCTAssertEqual(
                from.isValid ? Array(from.key) : nil, lower < model.entries.count ? model.entries[lower].key : nil, "\(what): from")
            // Two steps forward, then back.
            if from.isValid {
                try from.next()
                XCTAssertEqual(from.isValid ? Array(from.key) : nil, lower + 1 < model.entries.count ? model.entries[lower + 1].key : nil)
            }
            let below = try probe.withUnsafeBytes { try run.cursor(below: $0) }
            XCTAssertEqual(below.isValid ? Array(below.key) : nil, lower > 0 ? model.entries[lower - 1].key : nil, "\(what): below")
            if below.isValid {
                try below.previous()
                XCTAssertEqual(below.isValid ? Array(below.key) : nil, lower > 1 ? model.entries[lower - 2].key : nil)
            }
        }
        if !model.kind.isDelta {
            for offset in [0, 1, model.entries.count / 2, model.entries.count - 1, model.entries.count, model.entries.count + 5] {
                let at = try run.cursor(atOffset: offset)
                let expected = offset >= 0 && offset < model.entries.count ? model.entries[offset].key : nil
                XCTAssertEqual(at.isValid ? Array(at.key) : nil, expected, "\(what): offset \(offset)")
            }
        }
    }

    func testEveryLayoutAndKindAgainstASortedArray() throws {
        var rng = SplitMix64(seed: 1)
        let cases: [(RunKind, RunLayout)] = [
            (.primaryBase, .fixed8), (.primaryBase, .fixed16), (.primaryBase, .variable), (.primaryDelta, .fixed8),
            (.primaryDelta, .variable), (.secondaryBase, .variable), (.secondaryDelta, .variable),
        ]
        for (kind, layout) in cases {
            for n in [0, 1, 2, 126, 127, 128, 129, 1000, 20_000] {
                let keys = keys(n, layout: layout, rng: &rng)
                let model = Model(entries: keys.enumerated().map { ($0.element, payload(kind, $0.offset, rng: &rng)) }, kind: kind)
                let run = try build(model, layout: layout)
                try check(run, model, rng: &rng, "\(kind) \(layout) n=\(n)")
            }
        }
    }

    func testOverflowKeysInLeavesAndFences() throws {
        var rng = SplitMix64(seed: 2)
        for kind in [RunKind.secondaryBase, .primaryBase, .secondaryDelta] {
            for n in [1, 3, 50, 800] {
                let keys = keys(n, layout: .variable, rng: &rng, long: true)
                let model = Model(entries: keys.enumerated().map { ($0.element, payload(kind, $0.offset, rng: &rng)) }, kind: kind)
                let run = try build(model, layout: .variable)
                let summary = try RunValidator.validate(run)
                if keys.contains(where: { $0.count > RunFile.maxInlineKey }) { XCTAssertGreaterThan(summary.overflowPages, 0) }
                try check(run, model, rng: &rng, "overflow \(kind) n=\(n)")
            }
        }
    }

    func testKeysOutOfOrderOrOfTheWrongWidthAreRefused() throws {
        let writer = RunWriter(
            header: RunHeader(storeId: Self.store, runNumber: 1, kind: .secondaryBase, layout: .variable, sequence: 1),
            sink: RunMemorySink())
        try [UInt8]([2]).withUnsafeBytes { try writer.append(key: $0, payload: UnsafeRawBufferPointer(start: nil, count: 0)) }
        XCTAssertThrowsError(
            try [UInt8]([1]).withUnsafeBytes { try writer.append(key: $0, payload: UnsafeRawBufferPointer(start: nil, count: 0)) })
        XCTAssertThrowsError(
            try [UInt8]([2]).withUnsafeBytes { try writer.append(key: $0, payload: UnsafeRawBufferPointer(start: nil, count: 0)) })
        let fixed = RunWriter(
            header: RunHeader(storeId: Self.store, runNumber: 1, kind: .primaryBase, layout: .fixed8, sequence: 1), sink: RunMemorySink())
        XCTAssertThrowsError(try fixed.append(key: RecordKey([1, 2]), location: location(1)))
    }

    func testDamagedPagesAreFoundOnFirstUseAndByTheValidator() throws {
        var rng = SplitMix64(seed: 3)
        let keys = keys(5000, layout: .fixed8, rng: &rng)
        let model = Model(entries: keys.enumerated().map { ($0.element, payload(.primaryBase, $0.offset, rng: &rng)) }, kind: .primaryBase)
        let sink = RunMemorySink()
        let writer = RunWriter(
            header: RunHeader(storeId: Self.store, runNumber: 3, kind: .primaryBase, layout: .fixed8, sequence: 1), sink: sink)
        for e in model.entries {
            try e.key.withUnsafeBytes { k in try e.payload.withUnsafeBytes { try writer.append(key: k, payload: $0) } }
        }
        let header = try writer.finish()
        // Opening checks the header only: a damaged leaf is not noticed.
        var bytes = sink.bytes
        let leaf = Int(header.firstLeaf) + 3
        bytes[leaf * RunFile.pageSize + 100] ^= 0x40
        let run = try MappedRun(data: RunBytes(copying: bytes), path: "/run")
        XCTAssertFalse(run.isChecked(page: UInt32(leaf)))
        // A lookup on another leaf works; one that reaches the damaged leaf throws.
        XCTAssertNotNil(try keys[0].withUnsafeBytes { try run.find($0) })
        // Leaves hold 127 entries of 8 + 24 bytes: the fourth leaf holds entries 381..<508.
        XCTAssertThrowsError(try keys[400].withUnsafeBytes { try run.find($0) }) {
            XCTAssertEqual(($0 as? LogStoreError)?.code, .corruption)
        }
        XCTAssertNotNil(try keys[600].withUnsafeBytes { try run.find($0) })
        XCTAssertThrowsError(try RunValidator.validate(run)) { XCTAssertEqual(($0 as? LogStoreError)?.code, .corruption) }
        // A damaged header refuses the open.
        var head = sink.bytes
        head[40] ^= 1
        XCTAssertThrowsError(try MappedRun(data: RunBytes(copying: head), path: "/run"))
        // A short file too.
        XCTAssertThrowsError(try MappedRun(data: RunBytes(copying: Array(sink.bytes.dropLast(4096))), path: "/run"))
    }

    func testRunFilesOnEveryFileSystemMapOrRead() throws {
        for harness in [StoreHarness.memory(), StoreHarness.posix(self)] {
            try harness.fs.createDirectory(atPath: harness.root)
            let path = _joinPath(harness.root, RunFile.fileName(12))
            let file = try harness.fs.open(path, mode: .createNew)
            let writer = RunWriter(
                header: RunHeader(storeId: Self.store, runNumber: 12, kind: .primaryBase, layout: .fixed16, sequence: 5),
                sink: RunFileSink(file: file))
            var rng = SplitMix64(seed: 4)
            let keys = keys(3000, layout: .fixed16, rng: &rng)
            for (i, k) in keys.enumerated() { try writer.append(key: RecordKey(k), location: location(i)) }
            let header = try writer.finish()
            try file.sync()
            try file.close()
            let run = try MappedRun.open(path: path, fs: harness.fs)
            XCTAssertEqual(run.header, header)
            XCTAssertEqual(RunWitness(run.header), RunWitness(header))
            XCTAssertEqual(try RunValidator.validate(run).entries, 3000)
            for (i, k) in keys.enumerated() where i % 97 == 0 {
                let p = try k.withUnsafeBytes { try run.find($0) }
                XCTAssertEqual(p.map { RunLocationCoding.read($0) }, location(i), harness.name)
            }
        }
        XCTAssertEqual(RunFile.fileName(12), "000012.run")
        XCTAssertEqual(RunFile.number(fromFileName: "000012.run"), 12)
        XCTAssertNil(RunFile.number(fromFileName: "00x012.run"))
    }
}
