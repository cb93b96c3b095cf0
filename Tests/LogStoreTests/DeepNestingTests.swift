import Foundation
import LogStoreEngine
import XCTest

@testable import LogStore

/// A 10,000-level recursive enum, generic array chain or attribute tree. Stored as an item
/// holding one `chain`.
indirect enum DeepChain: Codable, Equatable, Sendable {
    case end
    case link(DeepChain)

    static func deep(_ n: Int) -> DeepChain {
        var c = DeepChain.end
        for _ in 0..<n { c = .link(c) }
        return c
    }
}

struct Nested: DataStoreItem {
    var id: Int
    var chain: DeepChain
}

/// No LogStore path recurses on user data without a bound. Hostile nesting is
/// refused with a typed error, and equality, hashing, printing and encoding of a deep
/// `AttributeValue` run on a thread with a small stack.
final class DeepNestingTests: StoreTestCase {
    static let levels = 10_000

    static func deepArray(_ n: Int, leaf: AttributeValue = .null) -> AttributeValue {
        var v = leaf
        for _ in 0..<n { v = .array([v]) }
        return v
    }

    static func deepMap(_ n: Int) -> AttributeValue {
        var v = AttributeValue.int(1)
        for _ in 0..<n { v = .map(["k": v]) }
        return v
    }

    /// Runs `body` on a thread with a 1 MiB stack (less than a macOS main thread's 8 MiB, more
    /// than its secondary threads' 512 KiB), where recursion once per level of a 10,000-level
    /// value overflows even in a debug build, and recursion bounded by `maxDepth` does not.
    func onSmallStack(_ body: () throws -> Void) throws { try onThread(stackSize: 1 << 20, body) }

    /// Runs `body` on a thread with a 64 MiB stack. The tests build and release their
    /// 10,000-level values there: releasing one recurses in the Swift runtime once per level, so
    /// on the main thread the tests would depend on its stack limit (`ulimit -s`, 8 MiB by
    /// default, less on some machines), and a crash there ends the whole XCTest run.
    func onLargeStack(_ body: () throws -> Void) throws { try onThread(stackSize: 64 << 20, body) }

    /// Runs `body` on a new thread with a stack of `stackSize` bytes, waits for it and rethrows
    /// its error.
    func onThread(stackSize: Int, _ body: () throws -> Void) throws {
        // @unchecked Sendable: handed to one thread while this one waits for it (the semaphore
        // orders every access).
        final class Box: @unchecked Sendable {
            var body: (() throws -> Void)?
            var error: (any Error)?
        }
        try withoutActuallyEscaping(body) { body in
            let box = Box()
            box.body = body
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                do { try box.body?() } catch { box.error = error }
                box.body = nil
                done.signal()
            }
            thread.stackSize = stackSize
            thread.start()
            // No timeout: the thread holds `body` until it returns, so this frame must outlive it.
            done.wait()
            if let error = box.error { throw error }
        }
    }

    func testDeeplyNestedRecursiveEnumIsRefusedThroughDataStore() throws {
        try onLargeStack {
            try forEachKind { _, store in
                let item = Nested(id: 1, chain: .deep(Self.levels))
                assertThrowsCode(.encodingFailed) { try store.writeSync { try $0.insert(item) } }
                // The deepest accepted nesting stores and reads back.
                let shallow = Nested(id: 2, chain: .deep(60))
                try store.writeSync { try $0.insert(shallow) }
                XCTAssertEqual(try store.read { try $0.item(ofType: Nested.self, id: 2) }?.chain, shallow.chain)
                XCTAssertEqual(try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Nested.self)) }, 1)
            }
        }
    }

    /// An encoding error keeps the coding path (shortened) and the reason as text, never the
    /// item: printing it on a thread with a Dispatch worker's 512 KiB stack does not walk the
    /// 10,000-level value (which overflowed that stack), and the error does not keep it alive.
    func testEncodingErrorOfDeepItemHoldsNoValueAndPrintsOnSmallStack() throws {
        final class Tracked: Codable, Sendable {
            let chain: DeepChain
            init(_ chain: DeepChain) { self.chain = chain }
        }
        struct TrackedItem: DataStoreItem {
            var id: Int
            var payload: Tracked
        }
        var caught: LogStoreError?
        weak var payload: Tracked?
        try onLargeStack {
            let store = LogDataStore.inMemory()
            try store.setup()
            let item = TrackedItem(id: 1, payload: Tracked(.deep(Self.levels)))
            payload = item.payload
            do {
                try store.writeSync { try $0.insert(item) }
                XCTFail("a 10,000-level item must be refused")
            } catch let e as LogStoreError {
                caught = e
            }
            try store.tearDown()
        }
        XCTAssertNil(payload, "the error keeps the refused item alive")
        let error = try XCTUnwrap(caught)
        XCTAssertEqual(error.code, .encodingFailed)
        let failure = try XCTUnwrap(error.underlyingError as? CodingFailure)
        XCTAssertTrue(failure.codingPath.contains("more levels"), failure.codingPath)
        var printed = ""
        try onThread(stackSize: 512 << 10) {
            printed = "\(error)" + String(reflecting: error)
        }
        XCTAssertLessThan(printed.count, 4_000)
        XCTAssertTrue(printed.contains("encodingFailed"))
    }

    func testDeeplyNestedDynamicItemIsRefusedNotEncodedUndecodably() throws {
        try onLargeStack {
            try forEachKind { _, store in
                for deep in [Self.deepArray(Self.levels), Self.deepMap(Self.levels)] {
                    let item = DynamicItem(itemType: "deep", id: .int(1), attributes: ["chain": deep])
                    assertThrowsCode(.encodingFailed) { try store.writeSync { try $0.insert(item) } }
                }
                XCTAssertEqual(try store.read { try $0.dynamicItems(ofType: "deep") }.count, 0)
                // Exactly at the limit (the item's map is level 1): stored and read back.
                let atLimit = DynamicItem(itemType: "deep", id: .int(2), attributes: ["chain": Self.deepArray(AttributeValue.maxDepth - 2)])
                try store.writeSync { try $0.insert(atLimit) }
                XCTAssertEqual(
                    try store.read { try $0.dynamicItem(ofType: "deep", id: .int(2)) }?.object(forKey: "chain"),
                    atLimit.object(forKey: "chain"))
                let tooDeep = DynamicItem(itemType: "deep", id: .int(3), attributes: ["chain": Self.deepArray(AttributeValue.maxDepth - 1)])
                assertThrowsCode(.encodingFailed) { try store.writeSync { try $0.insert(tooDeep) } }
            }
        }
    }

    func testDeepAttributeValueComparesHashesPrintsAndEncodesOnSmallStack() throws {
        try onLargeStack { try checkDeepAttributeValueOnSmallStack() }
    }

    func checkDeepAttributeValueOnSmallStack() throws {
        // The values are owned by this (large-stack) thread: the small-stack thread reaches them through an
        // unowned reference, so it never drops the last reference. (Releasing a 10,000-level
        // value recurses in the Swift runtime, which overflows a 1 MiB stack now and then: the
        // thread that releases the last reference does it.)
        final class Values: Sendable {
            let a = DeepNestingTests.deepArray(DeepNestingTests.levels), b = DeepNestingTests.deepArray(DeepNestingTests.levels)
            let m = DeepNestingTests.deepMap(DeepNestingTests.levels), n = DeepNestingTests.deepMap(DeepNestingTests.levels)
            let different = DeepNestingTests.deepArray(DeepNestingTests.levels, leaf: .int(1))  // same shape as a, another leaf
        }
        let values = Values()
        try onSmallStack { [unowned values] in
            let a = values.a
            let b = values.b
            let m = values.m
            let n = values.n
            let different = values.different
            XCTAssertEqual(a, b)
            XCTAssertEqual(m, n)
            XCTAssertNotEqual(a, m)
            XCTAssertEqual(a.hashValue, b.hashValue)
            XCTAssertEqual(m.hashValue, n.hashValue)
            XCTAssertTrue(a.exceedsMaxDepth)
            XCTAssertFalse(Self.deepArray(AttributeValue.maxDepth - 1).exceedsMaxDepth)
            XCTAssertTrue(Self.deepArray(AttributeValue.maxDepth).exceedsMaxDepth)
            let text = a.description
            XCTAssertTrue(text.hasPrefix("[[[") && text.contains("[…]"), String(text.prefix(200)))
            XCTAssertLessThan(text.count, 1_000)
            XCTAssertEqual("\(m)".count, m.debugDescription.count)
            var dumped = ""
            dump(a, to: &dumped)
            XCTAssertFalse(dumped.isEmpty)
            let item = DynamicItem(itemType: "deep", id: .int(1), attributes: ["chain": m])
            XCTAssertFalse(String(describing: item).isEmpty)
            XCTAssertEqual(item, item)
            XCTAssertEqual(Set([item]).count, 1)
            // encoded() is iterative; the decoders refuse what it wrote.
            let bytes = a.encoded()
            XCTAssertEqual(bytes.count, 2 * Self.levels + 1)
            XCTAssertThrowsError(try AttributeValue.decode(bytes)) { (error: any Error) in
                XCTAssertEqual((error as? LogStoreError)?.code, .corruption)
            }
            XCTAssertThrowsError(try AttributeDecoder().decode(DeepChain.self, from: a)) { error in
                XCTAssertEqual((error as? LogStoreError)?.code, .decodingFailed)
            }
            XCTAssertEqual(AttributeValue.compare(a, b), 0)
            XCTAssertEqual(AttributeValue.compare(a, different), -1, "null sorts before numbers")
            XCTAssertNotEqual(a, different)
        }
        // Built and destroyed here, on the large stack: releasing a 10,000-level indirect enum
        // recurses in the Swift runtime itself, whatever LogStore does.
        XCTAssertThrowsError(try AttributeEncoder().encode(DeepChain.deep(Self.levels))) { error in
            XCTAssertEqual((error as? LogStoreError)?.code, .encodingFailed)
        }
    }

    func testAttributeValueDescriptionIsCompactAndDeterministic() {
        let v = AttributeValue.map([
            "b": .array([.int(1), .double(1.5), .null, .bool(true)]), "a": .string("x\"y"), "c": .map([:]), "d": .array([]),
        ])
        XCTAssertEqual(v.description, #"["a": "x\"y", "b": [1, 1.5, null, true], "c": [:], "d": []]"#)
    }
}
