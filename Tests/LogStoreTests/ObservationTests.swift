import Foundation
import LogStore
import LogStoreEngine
import Testing
import _LogStoreTestSupport

/// Observation: `observe`, `observeItem`, `observeCount` on every kind of LogDataStore.
/// Each test writes, then waits until the observation has applied every commit (`_settle()`),
/// then checks whether an element is pending, so "no element" is asserted exactly, without
/// sleeping or timing out.
@Suite struct ObservationTests {
    struct Dish: DataStoreItem, Equatable {
        var id: Int
        var name: String
        var price: Int
    }
    struct Note: DataStoreItem {  // not Equatable: values compare by encoded bytes
        var id: String
        var text: String
    }

    /// The kinds of store observation must work on.
    enum Kind: String, CaseIterable, CustomStringConvertible {
        case memory, disk, child
        var description: String { rawValue }
    }

    /// A set-up store of `kind` (a child of an in-memory store for `.child`), and its cleanup.
    static func makeStore(_ kind: Kind, options: LogStoreOptions = .init()) throws -> (store: any DataStore, cleanup: () -> Void) {
        switch kind {
        case .memory:
            let s = LogDataStore.inMemory(options: options)
            try s.setup()
            return (s, { try? s.tearDown() })
        case .disk:
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-obs-\(UUID().uuidString)")
            var o = options
            o.durability = .none
            let s = LogDataStore(directory: dir, options: o)
            try s.setup()
            return (
                s,
                {
                    try? s.tearDown()
                    try? FileManager.default.removeItem(at: dir)
                }
            )
        case .child:
            let parent = LogDataStore.inMemory(options: options)
            try parent.setup()
            let child = try parent.makeChildDataStore()
            return (
                child,
                {
                    try? child.tearDown()
                    try? parent.tearDown()
                }
            )
        }
    }

    static func dishes(_ store: any DataStore, _ body: @escaping (any DataStoreReadWriteAccessor) throws -> Void) throws {
        try store.writeSync { try body($0) }
    }

    /// Settles the observation and returns the pending element, or nil if none is pending.
    static func pending<E>(_ it: inout DataStoreObservation<E>.Iterator) async throws -> E? {
        await it._settle()
        guard it._hasPendingElement else { return nil }
        return try await it.next()
    }

    @Test(arguments: Kind.allCases)
    func aRequestDeliversItsResultsThenOneElementPerRelevantCommit(kind: Kind) async throws {
        let (store, cleanup) = try Self.makeStore(kind)
        defer { cleanup() }
        try store.writeSync { a in
            for i in 1...5 { try a.insert(Dish(id: i, name: "dish \(i)", price: i * 10)) }
        }
        var request = DataStoreRequest(itemType: Dish.self)
        request.predicate = #Predicate { $0.price >= 20 }
        request.sortDescriptors = [SortDescriptor(\.price, order: .reverse)]
        var it = store.observe(request).makeAsyncIterator()
        let first = try #require(try await it.next())
        #expect(first.isInitial)
        #expect(first.items.map(\.id) == [5, 4, 3, 2])
        #expect(first.difference.insertions.count == 4)

        // A commit on another type, and one whose item does not match before or after: no element.
        try store.writeSync { try $0.insert(Note(id: "n", text: "hello")) }
        try store.writeSync { try $0.insert(Dish(id: 9, name: "cheap", price: 1)) }
        #expect(try await Self.pending(&it) == nil)
        // Rewriting an item with the same value: no element.
        try store.writeSync { try $0.insert(Dish(id: 3, name: "dish 3", price: 30)) }
        #expect(try await Self.pending(&it) == nil)

        // A price change that moves dish 2 to the top.
        try store.writeSync { try $0.insert(Dish(id: 2, name: "dish 2", price: 99)) }
        let moved = try #require(try await Self.pending(&it))
        #expect(!moved.isInitial)
        #expect(moved.items.map(\.id) == [2, 5, 4, 3])
        #expect(try #require([5, 4, 3, 2].applying(moved.difference)) == [2, 5, 4, 3])
        #expect(moved.updatedIDs == [2])

        // A name change in place: no id moves, one update.
        try store.writeSync { try $0.insert(Dish(id: 4, name: "renamed", price: 40)) }
        let renamed = try #require(try await Self.pending(&it))
        #expect(renamed.difference.isEmpty)
        #expect(renamed.updatedIDs == [4])
        #expect(renamed.items.map(\.name) == ["dish 2", "dish 5", "renamed", "dish 3"])

        // A delete and an insert in one commit.
        try store.writeSync { a in
            try a.deleteItem(ofType: Dish.self, id: 5)
            try a.insert(Dish(id: 7, name: "new", price: 35))
        }
        let both = try #require(try await Self.pending(&it))
        #expect(both.items.map(\.id) == [2, 4, 7, 3])
        #expect(try #require([2, 5, 4, 3].applying(both.difference)) == [2, 4, 7, 3])
        #expect(both.sequence == (try store.changeToken().sequence))
        #expect(it._elementsDelivered == 4)
    }

    @Test(arguments: Kind.allCases)
    func aWindowIsRecomputedOnlyWhenItCanChange(kind: Kind) async throws {
        let (store, cleanup) = try Self.makeStore(kind)
        defer { cleanup() }
        try store.writeSync { a in
            for i in 1...10 { try a.insert(Dish(id: i, name: "d\(i)", price: i)) }
        }
        var top = DataStoreRequest(itemType: Dish.self)
        top.sortDescriptors = [SortDescriptor(\.price)]
        top.limit = 3
        var it = store.observe(top).makeAsyncIterator()
        #expect(try await it.next()?.items.map(\.id) == [1, 2, 3])
        // Items after the full window's last result: no element.
        try store.writeSync { a in
            try a.insert(Dish(id: 8, name: "d8", price: 80))
            try a.deleteItem(ofType: Dish.self, id: 9)
            try a.insert(Dish(id: 20, name: "d20", price: 20))
        }
        #expect(try await Self.pending(&it) == nil)
        // One that sorts into the window pushes the last one out.
        try store.writeSync { try $0.insert(Dish(id: 30, name: "cheapest", price: 0)) }
        let e = try #require(try await Self.pending(&it))
        #expect(e.items.map(\.id) == [30, 1, 2])
        #expect(try #require([1, 2, 3].applying(e.difference)) == [30, 1, 2])

        // With an offset, a change before the window shifts it.
        var page = DataStoreRequest(itemType: Dish.self)
        page.sortDescriptors = [SortDescriptor(\.price)]
        page.offset = 2
        page.limit = 2
        var paged = store.observe(page).makeAsyncIterator()
        #expect(try await paged.next()?.items.map(\.id) == [2, 3])
        try store.writeSync { try $0.deleteItem(ofType: Dish.self, id: 30) }
        #expect(try await Self.pending(&paged)?.items.map(\.id) == [3, 4])
        try store.writeSync { try $0.insert(Dish(id: 50, name: "late", price: 500)) }
        #expect(try await Self.pending(&paged) == nil)
    }

    @Test(arguments: Kind.allCases)
    func anItemAndACountAreObservedWithTheSameRules(kind: Kind) async throws {
        let (store, cleanup) = try Self.makeStore(kind)
        defer { cleanup() }
        var item = store.observeItem(ofType: Note.self, id: "a").makeAsyncIterator()
        var expensive = DataStoreRequest(itemType: Dish.self)
        expensive.predicate = #Predicate { $0.price > 100 }
        var count = store.observeCount(expensive).makeAsyncIterator()
        var all = store.observeCount(DataStoreRequest(itemType: Dish.self)).makeAsyncIterator()
        let none = try #require(try await item.next())
        #expect(none.item == nil && none.isInitial)
        #expect(try await count.next()?.count == 0)
        #expect(try await all.next()?.count == 0)

        try store.writeSync { a in
            try a.insert(Note(id: "b", text: "other"))
            try a.insert(Dish(id: 1, name: "cheap", price: 5))
        }
        #expect(try await Self.pending(&item) == nil)
        #expect(try await Self.pending(&count) == nil)
        #expect(try await Self.pending(&all)?.count == 1)

        try store.writeSync { a in
            try a.insert(Note(id: "a", text: "hi"))
            try a.insert(Dish(id: 1, name: "dear", price: 500))
        }
        #expect(try await Self.pending(&item)?.item?.text == "hi")
        #expect(try await Self.pending(&count)?.count == 1)
        #expect(try await Self.pending(&all) == nil)

        try store.writeSync { try $0.insert(Note(id: "a", text: "hi")) }  // same value
        #expect(try await Self.pending(&item) == nil)
        try store.writeSync { _ = try $0.deleteAllItems(ofType: Note.self) }
        let gone = try #require(try await Self.pending(&item))
        #expect(gone.item == nil)
    }

    @Test func commitsArrivingWhileTheConsumerIsBusyCoalesceIntoOneElement() async throws {
        let (store, cleanup) = try Self.makeStore(.memory)
        defer { cleanup() }
        var it = store.observe(DataStoreRequest(itemType: Dish.self)).makeAsyncIterator()
        #expect(try await it.next()?.items.isEmpty == true)
        for i in 1...20 { try store.writeSync { try $0.insert(Dish(id: i, name: "d", price: i)) } }
        try store.writeSync { try $0.deleteItem(ofType: Dish.self, id: 7) }
        let e = try #require(try await Self.pending(&it))
        #expect(e.items.count == 19)
        #expect(e.difference.insertions.count == 19 && e.difference.removals.isEmpty)
        #expect(try await Self.pending(&it) == nil)
        #expect(it._elementsDelivered == 2)
        // Changes that cancel out before the consumer asks produce nothing.
        try store.writeSync { try $0.insert(Dish(id: 100, name: "x", price: 1)) }
        try store.writeSync { try $0.deleteItem(ofType: Dish.self, id: 100) }
        #expect(try await Self.pending(&it) == nil)
    }

    @Test func aMergeIsOneElementInTheParentAndTheChildSeesItsParentsChangesAfterIt() async throws {
        let parent = LogDataStore.inMemory()
        try parent.setup()
        defer { try? parent.tearDown() }
        let child = try parent.makeChildDataStore()
        var inParent = parent.observe(DataStoreRequest(itemType: Dish.self)).makeAsyncIterator()
        var inChild = child.observe(DataStoreRequest(itemType: Dish.self)).makeAsyncIterator()
        _ = try await inParent.next()
        _ = try await inChild.next()
        try child.writeSync { a in
            for i in 1...3 { try a.insert(Dish(id: i, name: "c", price: i)) }
        }
        try child.writeSync { try $0.insert(Dish(id: 4, name: "c", price: 4)) }
        try parent.writeSync { try $0.insert(Dish(id: 10, name: "p", price: 10)) }
        #expect(try await Self.pending(&inChild)?.items.map(\.id) == [1, 2, 3, 4])
        #expect(try await Self.pending(&inParent)?.items.map(\.id) == [10])
        let sequence = try parent.changeToken().sequence
        try parent.merge(child)
        let merged = try #require(try await Self.pending(&inParent))
        #expect(merged.items.map(\.id) == [1, 2, 3, 4, 10])
        #expect(merged.sequence == sequence + 1)
        #expect(try await Self.pending(&inParent) == nil)
        // After the merge the child shows the parent's item 10 too.
        #expect(try await Self.pending(&inChild)?.items.map(\.id) == [1, 2, 3, 4, 10])
    }

    @Test func tearDownCompletesObservationsAndAnOrphanedChildThrows() async throws {
        let parent = LogDataStore.inMemory()
        try parent.setup()
        let child = try parent.makeChildDataStore()
        var a = parent.observe(DataStoreRequest(itemType: Dish.self)).makeAsyncIterator()
        var b = child.observeCount(DataStoreRequest(itemType: Dish.self)).makeAsyncIterator()
        _ = try await a.next()
        _ = try await b.next()
        try parent.tearDown()
        #expect(try await a.next() == nil)
        #expect(try await a.next() == nil)
        await #expect(throws: LogStoreError.self) { _ = try await b.next() }
        #expect(try await b.next() == nil)
        // Observing a store that is not set up throws `.notOpen` at the first element.
        var c = parent.observe(DataStoreRequest(itemType: Dish.self)).makeAsyncIterator()
        do {
            _ = try await c.next()
            Issue.record("expected .notOpen")
        } catch let e as LogStoreError {
            #expect(e.code == .notOpen)
        }
    }

    @Test func aPoisonedStoreEndsItsObservationsWithTheError() async throws {
        let fs = SyncFailingFileSystem(InMemoryFileSystem())
        let store = LogDataStore(path: "/store", fileSystem: fs)
        try store.setup()
        defer { try? store.tearDown() }
        var it = store.observe(DataStoreRequest(itemType: Dish.self)).makeAsyncIterator()
        var count = store.observeCount(DataStoreRequest(itemType: Dish.self)).makeAsyncIterator()
        _ = try await it.next()
        _ = try await count.next()
        try store.writeSync { try $0.insert(Dish(id: 1, name: "durable", price: 1)) }
        #expect(try await Self.pending(&it)?.items.count == 1)
        fs.failSyncs()
        #expect(throws: LogStoreError.self) { try store.writeSync { try $0.insert(Dish(id: 2, name: "lost", price: 2)) } }
        for poisoned in [{ _ = try await it.next() }, { _ = try await count.next() }] as [() async throws -> Void] {
            do {
                try await poisoned()
                Issue.record("expected .storePoisoned")
            } catch let e as LogStoreError {
                #expect(e.code == .storePoisoned)
            }
        }
        #expect(try await it.next() == nil)
        // Reads still work on the published state; a new observation ends at once.
        #expect(try await store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Dish.self)) } == 1)
        var late = store.observe(DataStoreRequest(itemType: Dish.self)).makeAsyncIterator()
        await #expect(throws: LogStoreError.self) { _ = try await late.next() }
    }

    @Test func cancellingTheConsumersTaskCompletesTheObservation() async throws {
        let (store, cleanup) = try Self.makeStore(.memory)
        defer { cleanup() }
        let feed = try store.changeFeed()
        let task = Task {
            var n = 0
            for try await _ in store.observe(DataStoreRequest(itemType: Dish.self)) { n += 1 }
            return n
        }
        while feed._subscriberCount == 0 { await Task.yield() }
        task.cancel()
        #expect(try await task.value >= 0)
        #expect(feed._subscriberCount == 0)
        // Breaking out of a loop releases the iterator, which ends the observation too.
        for try await _ in store.observe(DataStoreRequest(itemType: Dish.self)) { break }
        #expect(feed._subscriberCount == 0)
    }

    @Test(arguments: [Kind.disk, Kind.memory])
    func concurrentWritersAndConsumersEndOnTheSameStateAsAFreshFetch(kind: Kind) async throws {
        var options = LogStoreOptions()
        options.durability = .synchronous
        let (store, cleanup) = try Self.makeStore(kind, options: options)
        defer { cleanup() }
        var cheap = DataStoreRequest(itemType: Dish.self)
        cheap.predicate = #Predicate { $0.price < 50 }
        cheap.sortDescriptors = [SortDescriptor(\.price), SortDescriptor(\.name)]
        var window = cheap
        window.limit = 5
        // Consumers: each replays the differences it gets and keeps the last element.
        let consumers = [cheap, window, DataStoreRequest(itemType: Dish.self)].map { request in
            Task { () throws -> (ids: [Int], last: [Dish], count: Int) in
                var ids: [Int] = []
                var last: [Dish] = []
                var n = 0
                for try await e in store.observe(request) {
                    guard let applied = ids.applying(e.difference) else {
                        throw LogStoreError(.invalidArgument, "difference does not apply")
                    }
                    ids = applied
                    last = Array(e.items)
                    n += 1
                    if last.contains(where: { $0.id == -1 }) { break }
                }
                return (ids, last, n)
            }
        }
        // Writers on four threads, sharing group commits.
        await withTaskGroup(of: Void.self) { group in
            for w in 0..<4 {
                group.addTask {
                    for i in 0..<50 {
                        try? store.writeSync { a in
                            try a.insert(Dish(id: w * 1000 + i % 20, name: "w\(w)", price: (i * 7 + w) % 100))
                            if i % 9 == 0 { _ = try a.deleteItem(ofType: Dish.self, id: w * 1000 + (i + 3) % 20) }
                        }
                    }
                }
            }
        }
        // A last commit every consumer sees, then each must end on a fresh fetch's state.
        try store.writeSync { try $0.insert(Dish(id: -1, name: "end", price: 0)) }
        for (request, consumer) in zip([cheap, window, DataStoreRequest(itemType: Dish.self)], consumers) {
            let (ids, last, n) = try await consumer.value
            let fresh = try await store.read { try $0.items(forRequest: request) }
            #expect(last == fresh)
            #expect(ids == fresh.map(\.id))
            #expect(n >= 1)
        }
    }

    @MainActor
    @Test func elementsAreReceivedOnTheMainActorAndComputedOffIt() async throws {
        let (store, cleanup) = try Self.makeStore(.memory)
        defer { cleanup() }
        var it = store.observe(DataStoreRequest(itemType: Dish.self)).makeAsyncIterator()
        _ = try await it.next()
        MainActor.assertIsolated()
        try store.writeSync { try $0.insert(Dish(id: 1, name: "x", price: 1)) }
        let e = try await it.next()
        MainActor.assertIsolated()
        #expect(e?.items.count == 1)
    }
}
