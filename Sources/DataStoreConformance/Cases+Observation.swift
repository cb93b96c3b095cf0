import Foundation
import LogStore

// Observation and change tracking (the "Observing Changes" article's numbered rules): what every
// backend's change feed must make true. A case settles an observation (every commit published so
// far applied) before asking whether an element is pending, so "no element" is checked exactly.

extension DataStoreConformance {
    /// Settles `iterator` and returns the pending element, or nil if none is pending.
    static func pending<E>(_ iterator: inout DataStoreObservation<E>.Iterator) async throws -> E? {
        await iterator._settle()
        guard iterator._hasPendingElement else { return nil }
        return try await iterator.next()
    }

    static func rated(_ store: any DataStore) throws -> [Restaurant] {
        try store.read { try $0.items(forRequest: ratedRequest) }
    }

    /// Rated 3 or better, by rating (best first), then id.
    static var ratedRequest: DataStoreRequest<Restaurant> {
        var r = DataStoreRequest(itemType: Restaurant.self)
        r.predicate = #Predicate { $0.rating >= 3 }
        r.sortDescriptors = [SortDescriptor(\.rating, order: .reverse)]
        return r
    }

    static var observationCases: [ConformanceCase] {
        [
            ConformanceCase(
                async: "observation.firstElementAtASnapshotThenEveryChange",
                "Observing Changes rules 1, 2 and 7: the first element is the request's results at a snapshot; each later element equals a fresh fetch, its difference applied to the previous ids gives its ids, its sequence increases.",
                requires: [.observation]
            ) { c in
                let store = try c.openStore()
                try store.writeSync { a in for i in 1...4 { try a.insert(restaurant(i, rating: i)) } }
                var it = store.observe(ratedRequest).makeAsyncIterator()
                guard let first = try await it.next() else { return c.fail("the observation ended at once") }
                c.expect(first.isInitial, "the first element says isInitial")
                c.expectEqual(Array(first.items), try rated(store), "first element")
                c.expectEqual([String]().applying(first.difference), first.items.map(\.id), "the first difference inserts every id")
                var ids = first.items.map(\.id)
                var sequence = first.sequence
                let steps: [(String, @Sendable (any DataStoreReadWriteAccessor) throws -> Void)] = [
                    ("insert a match", { try $0.insert(restaurant(9, rating: 5)) }),
                    ("move one to the top", { try $0.insert(restaurant(3, rating: 6)) }),
                    ("rename in place", { try $0.insert(Restaurant(id: restaurant(4).id, name: "Renamed", rating: 4)) }),
                    (
                        "delete one, insert one",
                        { a in
                            _ = try a.deleteItem(ofType: Restaurant.self, id: restaurant(9).id)
                            try a.insert(restaurant(10, rating: 3))
                        }
                    ),
                ]
                for (what, body) in steps {
                    try store.writeSync(body)
                    guard let e = try await pending(&it) else {
                        c.fail("\(what): no element")
                        continue
                    }
                    let fresh = try rated(store)
                    c.expectEqual(Array(e.items), fresh, what)
                    c.expectEqual(ids.applying(e.difference), fresh.map(\.id), "\(what): the difference applied to the previous ids")
                    c.expect(e.sequence > sequence, "\(what): sequence \(e.sequence) after \(sequence)")
                    ids = fresh.map(\.id)
                    sequence = e.sequence
                }
                c.expectEqual(it._elementsDelivered, 1 + steps.count, "elements delivered")
            },
            ConformanceCase(
                async: "observation.noElementForCommitsThatChangeNothingObserved",
                "Observing Changes rule 3: commits to other types, to items that match neither before nor after, rewrites with the same value and rolled-back blocks produce no element.",
                requires: [.observation]
            ) { c in
                let store = try c.openStore()
                try store.writeSync { a in for i in 1...3 { try a.insert(restaurant(i, rating: 4)) } }
                var it = store.observe(ratedRequest).makeAsyncIterator()
                var count = store.observeCount(ratedRequest).makeAsyncIterator()
                var item = store.observeItem(ofType: Restaurant.self, id: restaurant(1).id).makeAsyncIterator()
                _ = try await it.next()
                _ = try await count.next()
                _ = try await item.next()
                try store.writeSync { try $0.insert(Numbered(id: 1, value: "another type")) }
                try store.writeSync { try $0.insert(restaurant(7, rating: 1)) }
                try store.writeSync { try $0.insert(restaurant(7, rating: 2)) }
                try store.writeSync { try $0.insert(restaurant(1, rating: 4)) }
                do {
                    try store.writeSync { a in
                        try a.insert(restaurant(2, rating: 5))
                        throw ConformanceMarker()
                    }
                } catch is ConformanceMarker {}
                c.expect(try await pending(&it) == nil, "observe: no element for commits that change nothing it shows")
                c.expect(try await pending(&count) == nil, "observeCount: no element")
                c.expect(try await pending(&item) == nil, "observeItem: no element")
                try store.writeSync { try $0.insert(restaurant(7, rating: 3)) }
                let e = try await pending(&it)
                c.expectEqual(e.map { Array($0.items) }, try rated(store), "the relevant commit's element")
                c.expectEqual(try await pending(&count)?.count, 4, "the count after the relevant commit")
                c.expect(try await pending(&item) == nil, "observeItem of another item: no element")
            },
            ConformanceCase(
                async: "observation.busyConsumerGetsOneElementWithTheNewestState",
                "Observing Changes rule 6: commits arriving while the consumer does not ask coalesce into one element, and changes that cancel out produce none.",
                requires: [.observation]
            ) { c in
                let store = try c.openStore()
                var it = store.observe(DataStoreRequest(itemType: Restaurant.self)).makeAsyncIterator()
                _ = try await it.next()
                for i in 1...20 { try store.writeSync { try $0.insert(restaurant(i)) } }
                guard let e = try await pending(&it) else { return c.fail("no element after twenty commits") }
                c.expectEqual(e.items.count, 20, "one element with all twenty")
                c.expectEqual([String]().applying(e.difference), try allOf(Restaurant.self, in: store).map(\.id), "its difference")
                try store.writeSync { try $0.insert(restaurant(50)) }
                try store.writeSync { _ = try $0.deleteItem(ofType: Restaurant.self, id: restaurant(50).id) }
                c.expect(try await pending(&it) == nil, "an insert and its delete before the consumer asks: no element")
                c.expectEqual(it._elementsDelivered, 2, "elements delivered")
            },
            ConformanceCase(
                async: "observation.itemAndCount",
                "observeItem follows one item's existence and value; observeCount the request's count (offset and limit ignored).",
                requires: [.observation]
            ) { c in
                let store = try c.openStore()
                let id = restaurant(1).id
                var item = store.observeItem(ofType: Restaurant.self, id: id).makeAsyncIterator()
                var count = store.observeCount(ratedRequest).makeAsyncIterator()
                c.expect(try await item.next()?.item == nil, "no item at first")
                c.expectEqual(try await count.next()?.count, 0, "count at first")
                try store.writeSync { try $0.insert(restaurant(1, rating: 5)) }
                c.expectEqual(try await pending(&item)?.item, restaurant(1, rating: 5), "inserted")
                c.expectEqual(try await pending(&count)?.count, 1, "count after the insert")
                try store.writeSync { try $0.insert(restaurant(1, rating: 1)) }
                c.expectEqual(try await pending(&item)?.item?.rating, 1, "replaced")
                c.expectEqual(try await pending(&count)?.count, 0, "count after it stopped matching")
                try store.writeSync { _ = try $0.deleteAllItems(ofType: Restaurant.self) }
                let gone = try await pending(&item)
                c.expect(gone != nil && gone?.item == nil, "deleted by a delete-all")
            },
            ConformanceCase(
                async: "observation.tearDownCompletesAndAStoreNotSetUpThrowsNotOpen",
                "Observing Changes rule 11: tearDown() completes observations (next() returns nil, then nil again); observing a store that is not set up throws .notOpen at the first element.",
                requires: [.observation]
            ) { c in
                let store = try c.openStore()
                var it = store.observe(DataStoreRequest(itemType: Restaurant.self)).makeAsyncIterator()
                _ = try await it.next()
                try store.tearDown()
                c.expect(try await it.next() == nil, "next() after tearDown")
                c.expect(try await it.next() == nil, "next() again")
                var late = store.observe(DataStoreRequest(itemType: Restaurant.self)).makeAsyncIterator()
                do {
                    _ = try await late.next()
                    c.fail("observing a torn-down store did not throw")
                } catch let e as LogStoreError {
                    c.expectEqual(e.code, .notOpen, "observing a torn-down store")
                }
            },
            ConformanceCase(
                async: "observation.aMergeIsOneElementInTheParent",
                "Observing Changes rule 10: merging a child is one commit of the parent (one element); the child's observers see its parent's changes after the merge.",
                requires: [.observation, .childStores]
            ) { c in
                let parent = try c.openStore()
                let child = try parent.makeChildDataStore()
                defer { try? child.tearDown() }
                var inParent = parent.observe(DataStoreRequest(itemType: Restaurant.self)).makeAsyncIterator()
                var inChild = child.observe(DataStoreRequest(itemType: Restaurant.self)).makeAsyncIterator()
                _ = try await inParent.next()
                _ = try await inChild.next()
                for i in 1...3 { try child.writeSync { try $0.insert(restaurant(i)) } }
                try parent.writeSync { try $0.insert(restaurant(20)) }
                c.expectEqual(try await pending(&inChild)?.items.map(\.id), (1...3).map { restaurant($0).id }, "the child's own writes")
                c.expectEqual(try await pending(&inParent)?.items.map(\.id), [restaurant(20).id], "the parent's write")
                try parent.merge(child)
                c.expectEqual(try await pending(&inParent)?.items.map(\.id), [1, 2, 3, 20].map { restaurant($0).id }, "the merge")
                c.expect(try await pending(&inParent) == nil, "one element for the merge")
                c.expectEqual(
                    try await pending(&inChild)?.items.map(\.id), [1, 2, 3, 20].map { restaurant($0).id }, "the child after the merge")
            },
            ConformanceCase(
                async: "observation.randomScriptsMatchFreshFetches",
                "Every rule at once: seeded random scripts (writes, delete-alls, rollbacks, children, merges, resets, reopens, nukes) with random observers of requests, items and counts; after every step each observer equals a fresh fetch, its differences replay it, and steps that change nothing it observes yield no element.",
                requires: [.observation, .childStores]
            ) { c in
                for seed in UInt64(1)..<13 {
                    var state = seed &* 7919
                    func next() -> Int {
                        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                        return Int(truncatingIfNeeded: state >> 33)
                    }
                    let specs = (0..<4).map { _ in
                        ObserverSpec(slot: [0, 0, 1, 2][next() & 3], type: next() & 1, shape: next() & 7, argument: next() & 255)
                    }
                    let location = try c.makeLocation()
                    let script = try DataStoreModelChecker(location: location, capabilities: c.capabilities)
                    let observers = ObservationChecker(specs: specs)
                    defer {
                        observers.finish()
                        script.finish()
                    }
                    do {
                        try await observers.check(stores: script.currentStores, steps: script.stepsRun)
                        for op in randomScript(seed: seed, count: 30, childHeavy: seed % 2 == 0) {
                            try script.run([op])
                            try await observers.check(stores: script.currentStores, steps: script.stepsRun)
                        }
                    } catch let v as ModelViolation {
                        c.fail("seed \(seed), observers \(specs): \(v)")
                        return
                    }
                }
            },
            ConformanceCase(
                "changes.sinceATokenListsWrittenAndDeletedIds",
                "Observing Changes, change tracking rules 1-2: changes(since:) lists the ids inserted or replaced and the ids deleted after the token, per type; an id deleted and inserted again is written; the returned token continues from there.",
                requires: [.observation]
            ) { c in
                let store = try c.openStore()
                try store.writeSync { a in for i in 1...3 { try a.insert(restaurant(i)) } }
                let token = try store.changeToken()
                c.expect(try store.changes(since: token).isEmpty, "nothing since the current token")
                try store.writeSync { a in
                    try a.insert(restaurant(2, rating: 5))
                    _ = try a.deleteItem(ofType: Restaurant.self, id: restaurant(3).id)
                    try a.insert(restaurant(4))
                    try a.insert(Numbered(id: 7, value: "x"))
                }
                try store.writeSync { a in
                    _ = try a.deleteItem(ofType: Restaurant.self, id: restaurant(1).id)
                    try a.insert(restaurant(1))
                }
                let changes = try store.changes(since: token)
                let r = try changes.changes(of: Restaurant.self)
                c.expectEqual(Set(r.insertedOrUpdated), Set([1, 2, 4].map { restaurant($0).id }), "written")
                c.expectEqual(r.deleted, [restaurant(3).id], "deleted")
                c.expectEqual(try changes.changes(of: Numbered.self).insertedOrUpdated, [7], "another type")
                c.expect(try store.changes(since: changes.token).isEmpty, "nothing since the returned token")
                try store.writeSync { a in _ = try a.deleteAllItems(ofType: Numbered.self) }
                c.expectEqual(try store.changes(since: changes.token).changes(of: Numbered.self).deleted, [7], "a delete-all's ids")
            },
            ConformanceCase(
                "changes.aTokenTheStoreCannotAnswerThrowsHistoryTruncated",
                "Observing Changes, change tracking rule 3: a token of another store throws .historyTruncated instead of answering inexactly.",
                requires: [.observation]
            ) { c in
                let one = try c.openStore()
                let two = try c.openStore()
                try one.writeSync { try $0.insert(restaurant(1)) }
                c.expectThrows(.historyTruncated, "another store's token") { try two.changes(since: try one.changeToken()) }
            },
        ]
    }
}

/// The error a case's write block throws to roll back.
struct ConformanceMarker: Error {}
