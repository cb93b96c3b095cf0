import XCTest

@testable import LogStoreEngine

/// ``FrameCache``'s policy: S3-FIFO behind a ghost doorkeeper.
final class FrameCacheTests: XCTestCase {
    let frame = [UInt8](repeating: 7, count: 1_000)
    var charge: Int { frame.count + S3FIFO.entryOverhead }

    /// Reads frame `id` through the cache the way the read path does; returns whether it hit.
    @discardableResult
    func read(_ cache: FrameCache, _ id: UInt64) -> Bool {
        switch cache.lookup(id, needing: frame.count) {
        case .hit: return true
        case .admit:
            cache.insert(id, frame)
            return false
        case .skip:
            return false
        }
    }

    func testAFrameReadOnceIsNotCachedAndOneReadAgainIs() {
        let cache = FrameCache(capacity: 100 * charge)
        XCTAssertFalse(read(cache, 1))
        XCTAssertEqual(cache.bytesHeld, 0, "a first read caches no bytes")
        XCTAssertFalse(read(cache, 1), "the second read is admitted, and decompresses the frame whole")
        XCTAssertEqual(cache.bytesHeld, charge)
        XCTAssertTrue(read(cache, 1))
    }

    func testAPrefixIsExtendedAtLeastTwofoldWhenARecordLiesBeyondIt() {
        let cache = FrameCache(capacity: 100 * charge)
        _ = cache.lookup(5, needing: 100)
        guard case .admit(let first) = cache.lookup(5, needing: 100) else { return XCTFail("not admitted") }
        XCTAssertEqual(first, 100)
        cache.insert(5, Array(frame.prefix(100)))
        guard case .hit(let p) = cache.lookup(5, needing: 80) else { return XCTFail("prefix not cached") }
        XCTAssertEqual(p.count, 100)
        guard case .admit(let more) = cache.lookup(5, needing: 150) else { return XCTFail("a short prefix served a longer read") }
        XCTAssertEqual(more, 200, "at least twice the cached prefix")
        cache.insert(5, Array(frame.prefix(200)))
        cache.insert(5, Array(frame.prefix(50)))
        guard case .hit(let q) = cache.lookup(5, needing: 150) else { return XCTFail("longer prefix not kept") }
        XCTAssertEqual(q.count, 200, "a shorter prefix never replaces a longer one")
        XCTAssertEqual(cache.bytesHeld, 200 + S3FIFO.entryOverhead)
    }

    func testAScanDoesNotEvictFramesReadRepeatedly() {
        let cache = FrameCache(capacity: 100 * charge)
        let hot = (0..<50).map { UInt64($0) }
        for _ in 0..<4 { for id in hot { read(cache, id) } }
        XCTAssertTrue(hot.allSatisfy { read(cache, $0) }, "the hot set is cached")
        // A scan over 10,000 frames, each read once (twice in a row, as a scan reading two records
        // of a frame would).
        for id in UInt64(1_000)..<11_000 {
            read(cache, id)
            read(cache, id)
        }
        let stillHot = hot.filter { read(cache, $0) }.count
        XCTAssertGreaterThanOrEqual(stillHot, 45, "the scan displaced \(50 - stillHot) of 50 hot frames")
        XCTAssertLessThanOrEqual(cache.bytesHeld, cache.capacity)
    }

    func testTheCacheNeverHoldsMoreThanItsCapacity() {
        let cache = FrameCache(capacity: 20 * charge)
        var rng = SplitMix64(seed: 3)
        for _ in 0..<20_000 {
            read(cache, rng.next() % 200)
            XCTAssertLessThanOrEqual(cache.bytesHeld, cache.capacity)
        }
    }

    func testAFrameOverAnEighthOfTheCacheIsNeverCached() {
        let cache = FrameCache(capacity: 4 * charge)
        XCTAssertFalse(read(cache, 9))
        XCTAssertFalse(read(cache, 9))
        XCTAssertFalse(read(cache, 9))
        XCTAssertEqual(cache.bytesHeld, 0)
    }

    func testZeroCapacityCachesNothing() {
        let cache = FrameCache(capacity: 0)
        for _ in 0..<3 { XCTAssertFalse(read(cache, 1)) }
        XCTAssertEqual(cache.bytesHeld, 0)
    }

    func testRemoveAllEmptiesTheCache() {
        let cache = FrameCache(capacity: 100 * charge)
        for id in UInt64(0)..<10 {
            read(cache, id)
            read(cache, id)
        }
        XCTAssertGreaterThan(cache.bytesHeld, 0)
        cache.removeAll()
        XCTAssertEqual(cache.bytesHeld, 0)
        XCTAssertFalse(read(cache, 3))
    }
}
