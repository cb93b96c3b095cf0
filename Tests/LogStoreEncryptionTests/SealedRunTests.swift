import Foundation
import LogStoreEngine
import Synchronization
import XCTest

@testable import LogStoreEncryption

/// Sealed run files (an encrypted store's index runs, RunFormat.swift): the same entries read the
/// same through a sealed run as through a clear one, a changed bit in a sealed page is
/// `.corruption` naming the run and the page's offset, and a run of another cipher, key or store
/// never reads.
final class SealedRunTests: XCTestCase {
    static let store = StoreID(bytes: [UInt8](repeating: 7, count: 16))
    static let marker = Array("LOGSTORE-MARKER-7f3a9c".utf8)

    static func cipher(_ byte: UInt8 = 0x42) throws -> any StoreCipher { try AESGCMCipher(key: [UInt8](repeating: byte, count: 32)) }

    /// Sorted entries of `kind` and `layout`: marker-prefixed keys (with a few long ones, on
    /// overflow pages) for the variable layout, numbers for the fixed ones.
    static func entries(_ kind: RunKind, _ layout: RunLayout, count: Int) -> [(key: [UInt8], payload: [UInt8])] {
        var keys: [[UInt8]]
        switch layout {
        case .fixed8: keys = (0..<count).map { withUnsafeBytes(of: UInt64($0 * 3).bigEndian, Array.init) }
        case .fixed16: keys = (0..<count).map { marker.prefix(12) + withUnsafeBytes(of: UInt32($0).bigEndian, Array.init) }
        case .variable:
            keys = (0..<count).map { marker + Array("-user-\($0 / 7)-\($0)".utf8) }
            keys += (0..<5).map { marker + [UInt8](repeating: 0x7A, count: 1500 + $0) }
        }
        keys.sort { $0.lexicographicallyPrecedes($1) }
        return keys.enumerated().map { n, key in
            var payload = [UInt8](repeating: UInt8(truncatingIfNeeded: n), count: kind.payloadSize)
            if kind.isDelta {
                payload[0] =
                    kind.isPrimary ? [RunChange.newKey, RunChange.tombstone, 0][n % 3] : [RunChange.newKey, RunChange.tombstone][n % 2]
            }
            return (key, payload)
        }
    }

    static func write(
        _ kind: RunKind, _ layout: RunLayout, _ entries: [(key: [UInt8], payload: [UInt8])], cipher: (any StoreCipher)?
    ) throws -> [UInt8] {
        let sink = RunMemorySink()
        let w = try RunWriter(
            header: RunHeader(storeId: store, runNumber: 5, kind: kind, layout: layout, sequence: 9), sink: sink, cipher: cipher)
        for e in entries { try e.key.withUnsafeBytes { k in try e.payload.withUnsafeBytes { try w.append(key: k, payload: $0) } } }
        _ = try w.finish()
        return sink.bytes
    }

    static func open(_ bytes: [UInt8], cipher: (any StoreCipher)?, store: StoreID = store) throws -> MappedRun {
        try MappedRun(data: RunBytes(copying: bytes), path: "/s/000005.run", cipher: cipher, storeId: store)
    }

    static func all(_ run: MappedRun, backward: Bool = false) throws -> [[UInt8]] {
        var out: [[UInt8]] = []
        let c = backward ? try run.cursor(below: nil) : try run.cursor(from: nil)
        while c.isValid {
            out.append(Array(c.key) + Array(UnsafeRawBufferPointer(start: c.payload, count: run.header.kind.payloadSize)))
            if backward { try c.previous() } else { try c.next() }
        }
        return out
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] && Array(haystack[i..<(i + needle.count)]) == needle {
            return true
        }
        return false
    }

    func assertCorruption(_ what: String, path: String? = nil, offset: UInt64? = nil, line: UInt = #line, _ body: () throws -> Void) {
        XCTAssertThrowsError(try body(), what, line: line) { error in
            guard let e = error as? LogStoreError else { return XCTFail("\(what): \(error)", line: line) }
            XCTAssertEqual(e.code, .corruption, "\(what): \(e)", line: line)
            if let path { XCTAssertEqual(e.path, path, what, line: line) }
            if let offset { XCTAssertEqual(e.offset, offset, "\(what): \(e)", line: line) }
        }
    }

    func testASealedRunReadsExactlyAsTheClearRun() throws {
        let cipher = try Self.cipher()
        let kinds: [(RunKind, RunLayout)] = [
            (.primaryBase, .fixed8), (.primaryBase, .fixed16), (.primaryBase, .variable), (.primaryDelta, .variable),
            (.primaryDelta, .fixed8), (.secondaryBase, .variable), (.secondaryDelta, .variable),
        ]
        for (kind, layout) in kinds {
            let what = "\(kind) \(layout)"
            let entries = Self.entries(kind, layout, count: 3_000)
            let clearBytes = try Self.write(kind, layout, entries, cipher: nil)
            let sealedBytes = try Self.write(kind, layout, entries, cipher: cipher)
            XCTAssertEqual(sealedBytes.count % RunFile.pageSize, 0, what)
            XCTAssertGreaterThanOrEqual(sealedBytes.count, clearBytes.count, what)
            if layout != .fixed8 {
                let needle = Array(Self.marker.prefix(12))
                XCTAssertTrue(Self.contains(clearBytes, needle), "the search can fail: \(what)")
                XCTAssertFalse(Self.contains(sealedBytes, needle), "no key bytes in a sealed run: \(what)")
            }
            let clear = try Self.open(clearBytes, cipher: nil)
            let sealed = try Self.open(sealedBytes, cipher: cipher)
            XCTAssertEqual(sealed.header.cipher, StoreCipherAlgorithm.aes256GCM, what)
            XCTAssertNotEqual(sealed.header.salt, [UInt8](repeating: 0, count: 16), what)
            XCTAssertEqual(clear.header.cipher, 0, what)
            XCTAssertEqual(try RunValidator.validate(sealed), try RunValidator.validate(clear), what)
            XCTAssertEqual(sealed.entryCount, entries.count, what)
            XCTAssertEqual(try Self.all(sealed), try Self.all(clear), what)
            XCTAssertEqual(try Self.all(sealed, backward: true), try Self.all(clear, backward: true), what)
            XCTAssertEqual(try Self.all(sealed), entries.map { $0.key + $0.payload }, what)
            for (i, e) in entries.enumerated() where i % 37 == 0 || e.key.count > 1000 {
                for probe in [e.key, e.key + [0], Array(e.key.dropLast())] {
                    try probe.withUnsafeBytes { q in
                        let a = try sealed.find(q).map { Array(UnsafeRawBufferPointer(start: $0, count: kind.payloadSize)) }
                        let b = try clear.find(q).map { Array(UnsafeRawBufferPointer(start: $0, count: kind.payloadSize)) }
                        XCTAssertEqual(a, b, what)
                        XCTAssertEqual(try sealed.rank(of: q), try clear.rank(of: q), what)
                        let c = try sealed.cursor(from: q)
                        let d = try clear.cursor(from: q)
                        XCTAssertEqual(c.isValid ? Array(c.key) : nil, d.isValid ? Array(d.key) : nil, what)
                    }
                }
                if !kind.isDelta {
                    let c = try sealed.cursor(atOffset: i)
                    withExtendedLifetime(c) { XCTAssertEqual(Array(c.key), e.key, what) }
                }
            }
        }
    }

    func testAChangedBitInASealedPageIsCorruptionAtThatPage() throws {
        let cipher = try Self.cipher()
        let entries = Self.entries(.primaryBase, .variable, count: 2_000)
        let good = try Self.write(.primaryBase, .variable, entries, cipher: cipher)
        let header = try Self.open(good, cipher: cipher).header
        let pages = [1, header.rootPage, header.pageCount - 1, header.pageCount / 2]
        for page in pages {
            for at in [0, 100, RunFile.sealedPageSize - 1, RunFile.sealedPageSize, RunFile.pageSize - 1] {
                var bad = good
                bad[Int(page) * RunFile.pageSize + at] ^= 0x10
                let run = try Self.open(bad, cipher: cipher)
                assertCorruption("page \(page) byte \(at)", path: "/s/000005.run", offset: UInt64(page) * UInt64(RunFile.pageSize)) {
                    _ = try RunValidator.validate(run)
                }
                XCTAssertFalse(run.isChecked(page: page))
            }
        }
        // The root is read by every lookup: a damaged root fails the first one.
        var bad = good
        bad[Int(header.rootPage) * RunFile.pageSize + 7] ^= 1
        let run = try Self.open(bad, cipher: cipher)
        assertCorruption("find through a damaged root", offset: UInt64(header.rootPage) * UInt64(RunFile.pageSize)) {
            _ = try entries[0].key.withUnsafeBytes { try run.find($0) }
        }
        // The same page asked again fails again (it was never marked checked).
        assertCorruption("again", offset: UInt64(header.rootPage) * UInt64(RunFile.pageSize)) {
            _ = try entries[0].key.withUnsafeBytes { try run.find($0) }
        }
    }

    func testARunOfAnotherCipherKeyOrStoreNeverReads() throws {
        let cipher = try Self.cipher()
        let entries = Self.entries(.primaryBase, .fixed8, count: 1_000)
        let sealed = try Self.write(.primaryBase, .fixed8, entries, cipher: cipher)
        let clear = try Self.write(.primaryBase, .fixed8, entries, cipher: nil)
        assertCorruption("a sealed run in a clear store", path: "/s/000005.run") { _ = try Self.open(sealed, cipher: nil) }
        assertCorruption("a clear run in an encrypted store", path: "/s/000005.run") { _ = try Self.open(clear, cipher: cipher) }
        let root = try Self.open(sealed, cipher: cipher).header.rootPage
        let offset = UInt64(root) * UInt64(RunFile.pageSize)
        let otherKey = try Self.open(sealed, cipher: try Self.cipher(0x43))
        assertCorruption("another key", offset: offset) { _ = try otherKey.cursor(from: nil) }
        let otherStore = try Self.open(sealed, cipher: cipher, store: StoreID(bytes: [UInt8](repeating: 8, count: 16)))
        assertCorruption("another store's id", offset: offset) { _ = try otherStore.cursor(from: nil) }
        // A page moved to another place (or run) fails too: its nonce and AAD name its place.
        var swapped = sealed
        let a = Int(root) * RunFile.pageSize
        let b = 1 * RunFile.pageSize
        let pageA = Array(swapped[a..<(a + RunFile.pageSize)])
        swapped.replaceSubrange(a..<(a + RunFile.pageSize), with: swapped[b..<(b + RunFile.pageSize)])
        swapped.replaceSubrange(b..<(b + RunFile.pageSize), with: pageA)
        assertCorruption("pages swapped", offset: offset) { _ = try Self.open(swapped, cipher: cipher).cursor(from: nil) }
    }

    func testThreadsOpeningTheSamePagesAtOnceReadTheSameEntries() throws {
        let cipher = try Self.cipher()
        let entries = Self.entries(.primaryBase, .variable, count: 4_000)
        let bytes = try Self.write(.primaryBase, .variable, entries, cipher: cipher)
        for _ in 0..<4 {
            let run = try Self.open(bytes, cipher: cipher)
            let failures = Mutex(0)
            DispatchQueue.concurrentPerform(iterations: 8) { t in
                for (i, e) in entries.enumerated() where (i + t) % 3 == 0 {
                    let found = try? e.key.withUnsafeBytes { q in
                        try run.find(q).map { Array(UnsafeRawBufferPointer(start: $0, count: RunKind.primaryBase.payloadSize)) }
                    }
                    if found != e.payload { failures.withLock { $0 += 1 } }
                }
            }
            XCTAssertEqual(failures.withLock { $0 }, 0)
            XCTAssertEqual(try RunValidator.validate(run).entries, entries.count)
        }
    }
}
