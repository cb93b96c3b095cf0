import Foundation
import XCTest

@testable import LogStoreEngine

/// A byte flipped in bytes the store knows were synced (a sealed segment; the tail up to
/// the furthest `syncedThrough` a frame records) is always detected: the open refuses with
/// `.corruption`, or opens with every value intact. Never a wrong value, never a silent cut.
///
/// `LOGSTORE_FLIP_COUNT` sets the number of flips (default 200; Docs/Testing.md records a 10,000-flip
/// run); `LOGSTORE_FLIP_SEED` the seed (default: random, printed on failure).
final class SyncedByteFlipTests: XCTestCase {
    func testEveryFlippedSyncedByteIsDetected() throws {
        let env = ProcessInfo.processInfo.environment
        let flips = env["LOGSTORE_FLIP_COUNT"].flatMap(Int.init) ?? 200
        let seed = env["LOGSTORE_FLIP_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        var rng = SplitMix64(seed: seed)

        // A store of several segments, every commit synced, no checkpoint (so the open reads every
        // byte of the log).
        var o = LogEngineOptions()
        o.autoCompaction = false
        o.checkpointOnClose = false
        o.checkpointInterval = 0
        o.segmentSize = 64 << 10
        o.maxFramePayload = 512
        let source = InMemoryFileSystem()
        let dir = "/store"
        var model: [RecordKey: [UInt8]] = [:]
        let e = try LogEngine.open(directory: dir, fileSystem: source, options: o)
        for t in 0..<120 {
            var ops: [RecordOperation] = []
            for j in 0..<4 {
                let k = RecordKey(Array("k\(t % 70)-\(j)".utf8))
                let v = (0..<rng.int(in: 10...700)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                model[k] = v
                ops.append(.put(type: "T", key: k, value: v))
            }
            try e.commit(ops)
        }
        let segments = e.manifestInfo.segments
        XCTAssertGreaterThanOrEqual(segments.count, 3)
        try e.close()
        var files: [String: [UInt8]] = [:]
        for name in try source.contentsOfDirectory(atPath: dir) { files[name] = try source.readAll(dir + "/" + name) }

        // The synced regions: whole sealed segments; the tail up to the furthest synced offset a
        // frame of it records.
        var regions: [(name: String, end: Int)] = []
        for n in segments.dropLast() {
            regions.append((LogStoreFormat.segmentFileName(n), files[LogStoreFormat.segmentFileName(n)]?.count ?? 0))
        }
        let tailName = LogStoreFormat.segmentFileName(segments[segments.count - 1])
        let tail = files[tailName] ?? []
        var vouched = 0
        tail.withUnsafeBytes { buf in
            var p = SegmentHeader.sizeV2
            while case .frame(let h, let payload) = LogFrame.parse(buf, at: p, version: 2) {
                vouched = max(vouched, Int(h.syncedThrough))
                p = payload + h.storedLength
            }
        }
        // A tail holding one transaction (the last roll-over came with the last commit, which the
        // random value sizes decide) has no later frame to vouch for it: nothing of it is synced
        // as far as the log can tell, and only the sealed segments are flipped.
        if vouched > SegmentHeader.sizeV2 { regions.append((tailName, vouched)) }
        let total = regions.reduce(0) { $0 + $1.end }

        var refused = 0
        var intact = 0
        for i in 0..<flips {
            var at = rng.int(in: 0..<total)
            var region = 0
            while at >= regions[region].end {
                at -= regions[region].end
                region += 1
            }
            let name = regions[region].name
            let mask = UInt8(1) << UInt8(rng.int(in: 0..<8))
            let fs = InMemoryFileSystem()
            try fs.createDirectory(atPath: dir)
            for (n, bytes) in files {
                var b = bytes
                if n == name { b[at] ^= mask }
                try fs.writeAll(dir + "/" + n, b)
            }
            let what = "flip \(i) (seed \(seed)): \(name) byte \(at) ^ \(mask)"
            do {
                let opened = try LogEngine.open(directory: dir, fileSystem: fs, options: o)
                defer { try? opened.close() }
                let snap = try opened.snapshot()
                XCTAssertNil(opened.recoveryReport.truncatedTail, "\(what): a synced byte was cut as an unsynced tail")
                XCTAssertEqual(snap.count(ofType: "T"), model.count, what)
                for (k, v) in model {
                    do {
                        guard let got = try snap.value(type: "T", key: k) else { return XCTFail("\(what): \(k) missing") }
                        XCTAssertEqual(Array(got), v, "\(what): a wrong value")
                    } catch let err as LogStoreError where err.code == .corruption {
                        // Detected on read.
                    }
                }
                intact += 1
            } catch let err as LogStoreError {
                XCTAssertEqual(err.code, .corruption, "\(what): \(err)")
                refused += 1
            }
        }
        print("synced byte flips: \(flips) (seed \(seed)): \(refused) refused with .corruption, \(intact) opened intact, 0 wrong values")
        XCTAssertEqual(refused + intact, flips)
    }
}
