import Foundation
import LogStore

// Concurrency article, rules 1-12: threads, snapshots, atomicity, issue order, reentrancy.

extension DataStoreConformance {
    static var concurrencyCases: [ConformanceCase] {
        [
            ConformanceCase(
                "concurrency.readOnCallingThreadOverOneSnapshot",
                "Rule 1: read runs its block on the calling thread, over one snapshot taken when it starts, however long it runs."
            ) { c in
                let store = try c.openStore()
                try store.writeSync { try $0.insert(restaurant(1)) }
                let caller = currentThreadID()
                try store.read { a in
                    c.expectEqual(currentThreadID(), caller, "read's block thread")
                    c.expectEqual(try a.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)), 1)
                    let done = DispatchSemaphore(value: 0)
                    DispatchQueue.global().async {
                        do { try store.writeSync { try $0.insert(restaurant(2)) } } catch { c.fail("write during a read: \(error)") }
                        done.signal()
                    }
                    c.wait(done, "a write committed while a read block runs")
                    c.expectEqual(
                        try a.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)), 1,
                        "the snapshot taken when the block started")
                    c.expectEqual(try a.items(forRequest: DataStoreRequest(itemType: Restaurant.self)).map(\.id), ["r001"])
                    c.expect(try a.item(ofType: Restaurant.self, id: "r002") == nil, "a later commit is invisible to the running read")
                }
                c.expectEqual(try countOf(Restaurant.self, in: store), 2, "a read after the commit")
            },
            ConformanceCase(
                "concurrency.readsNeverWaitForWriters",
                "Rule 2: a read completes while a write block is still running on another thread."
            ) { c in
                let store = try c.openStore()
                try store.writeSync { try $0.insert(restaurant(1)) }
                let inside = DispatchSemaphore(value: 0)
                let release = DispatchSemaphore(value: 0)
                let finished = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    do {
                        try store.writeSync { a in
                            try a.insert(restaurant(2))
                            inside.signal()
                            _ = release.wait(timeout: .now() + 60)
                        }
                    } catch { c.fail("writer: \(error)") }
                    finished.signal()
                }
                guard c.wait(inside, "the writer to enter its block") else { return }
                let readDone = DispatchSemaphore(value: 0)
                let seen = SharedBox(-1)
                DispatchQueue.global().async {
                    seen.value = (try? countOf(Restaurant.self, in: store)) ?? -2
                    readDone.signal()
                }
                let readReturned = readDone.wait(timeout: .now() + 10) == .success
                release.signal()
                c.expect(readReturned, "a read waited for a running write block")
                if !readReturned { c.wait(readDone, "the read") }
                c.expectEqual(seen.value, 1, "the read saw only committed data")
                c.wait(finished, "the writer")
                c.expectEqual(try countOf(Restaurant.self, in: store), 2)
            },
            ConformanceCase(
                "concurrency.writesAreSerialized",
                "Rule 3: write blocks run one at a time: concurrent read-modify-write blocks lose no update."
            ) { c in
                let store = try c.openStore()
                let group = DispatchGroup()
                for q in 0..<4 {
                    DispatchQueue.global().async(group: group) {
                        for i in 0..<25 {
                            do {
                                try store.writeSync { a in
                                    let n = Int(try a.item(ofType: Numbered.self, id: 0)?.value ?? "0") ?? 0
                                    try a.insert(Numbered(id: 0, value: String(n + 1)))
                                    try a.insert(Numbered(id: 1000 + q * 100 + i, value: "q\(q)"))
                                }
                            } catch { c.fail("writer \(q): \(error)") }
                        }
                    }
                }
                c.wait(group, "4 writers")
                c.expectEqual(try store.read { try $0.item(ofType: Numbered.self, id: 0) }?.value, "100", "serialized increments")
                c.expectEqual(try countOf(Numbered.self, in: store), 101)
            },
            ConformanceCase(
                "concurrency.writeSyncOnCallingThreadReturnsValue",
                "Rule 3: writeSync runs its block on the calling thread and returns the block's value."
            ) { c in
                let store = try c.openStore()
                let caller = currentThreadID()
                let v = try store.writeSync { a -> Int in
                    c.expectEqual(currentThreadID(), caller, "writeSync's block thread")
                    try a.insert(restaurant(1))
                    return 42
                }
                c.expectEqual(v, 42)
            },
            ConformanceCase(
                "concurrency.writeBlockSeesOwnChangesOthersDoNot",
                "Rule 4: reads in a write block include its changes; other readers see none of them before the commit."
            ) { c in
                let store = try c.openStore()
                try store.writeSync { try $0.insert(restaurant(1)) }
                try store.writeSync { a in
                    try a.insert(restaurant(2))
                    c.expectEqual(try a.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)), 2)
                    c.expectEqual(try countOf(Restaurant.self, in: store), 1, "a read outside the block during it")
                    c.expect(try a.delete(restaurant(1)), "delete of an existing item returns true")
                    c.expect(try !a.delete(restaurant(1)), "delete of a deleted item returns false")
                    c.expectEqual(try a.items(forRequest: DataStoreRequest(itemType: Restaurant.self)).map(\.id), ["r002"])
                    c.expectEqual(try a.deleteAllItems(ofType: Restaurant.self), 1)
                    c.expectEqual(try a.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)), 0)
                    try a.insert(restaurant(3))
                    var req = DataStoreRequest(itemType: Restaurant.self)
                    req.predicate = #Predicate<Restaurant> { $0.rating == 3 }
                    c.expectEqual(try a.items(forRequest: req).map(\.id), ["r003"], "a predicate request inside the block")
                    c.expectEqual(try a.item(ofType: Restaurant.self, id: "r003")?.name, "Restaurant 3")
                }
                c.expectEqual(try allOf(Restaurant.self, in: store).map(\.id), ["r003"])
            },
            ConformanceCase(
                "concurrency.commitsAreAtomicForReaders",
                "Rule 5: readers see all of a transaction or none of it."
            ) { c in
                let store = try c.openStore()
                let stop = SharedBox(false)
                let bad = SharedBox(0)
                let group = DispatchGroup()
                for _ in 0..<3 {
                    DispatchQueue.global().async(group: group) {
                        while !stop.value {
                            let n = (try? countOf(Numbered.self, in: store)) ?? -1
                            let listed =
                                (try? store.read { try $0.items(forRequest: DataStoreRequest(itemType: Numbered.self)).count }) ?? -1
                            if n % 10 != 0 || listed % 10 != 0 { bad.update { $0 += 1 } }
                        }
                    }
                }
                for round in 0..<30 {
                    try store.writeSync { a in for i in 0..<10 { try a.insert(Numbered(id: round * 10 + i, value: "x")) } }
                }
                stop.value = true
                c.wait(group, "the readers")
                c.expectEqual(bad.value, 0, "reads that saw part of a transaction")
            },
            ConformanceCase(
                "concurrency.committedWriteVisibleToLaterReads",
                "Rule 7: a write is visible to every read that starts after writeSync returns, on any thread."
            ) { c in
                let store = try c.openStore()
                for i in 0..<20 {
                    try store.writeSync { try $0.insert(Numbered(id: i, value: "v\(i)")) }
                    let seen = SharedBox<String?>(nil)
                    let done = DispatchSemaphore(value: 0)
                    DispatchQueue.global().async {
                        seen.value = try? store.read { try $0.item(ofType: Numbered.self, id: i) }?.value
                        done.signal()
                    }
                    c.wait(done, "a read on another thread")
                    c.expectEqual(seen.value, "v\(i)")
                    try store.read { a in
                        // A read nested in a read still starts after the write: it sees it too.
                        c.expectEqual(try a.item(ofType: Numbered.self, id: i)?.value, "v\(i)")
                    }
                }
            },
            ConformanceCase(
                "concurrency.nestedReadsSeeNewerCommits",
                "Rules 1 and 7: a read nested in a read block takes its own snapshot: it sees a commit made between the two."
            ) { c in
                let store = try c.openStore()
                try store.writeSync { try $0.insert(Numbered(id: 1, value: "a")) }
                try store.read { outer in
                    try store.writeSync { try $0.insert(Numbered(id: 2, value: "b")) }
                    try store.read { inner in
                        c.expectEqual(try inner.countItems(forRequest: DataStoreRequest(itemType: Numbered.self)), 2, "the nested read")
                        try store.read { innermost in
                            c.expectEqual(try innermost.item(ofType: Numbered.self, id: 2)?.value, "b")
                        }
                    }
                    c.expectEqual(
                        try outer.countItems(forRequest: DataStoreRequest(itemType: Numbered.self)), 1, "the outer read's snapshot")
                }
                // Reads inside a write block, and writes of other stores inside reads, are allowed.
                try store.writeSync { a in
                    try a.insert(Numbered(id: 3, value: "c"))
                    c.expectEqual(
                        try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Numbered.self)) }, 2,
                        "a read in a write block sees the committed state")
                }
            },
            ConformanceCase(
                "concurrency.writeAsyncCommitsInIssueOrder",
                "Rules 8 and 9: writeAsync returns at once, runs its block off the caller's thread, commits in issue order, and completes after the commit."
            ) { c in
                let store = try c.openStore()
                let done = DispatchGroup()
                let caller = currentThreadID()
                let completions = SharedBox<[Int]>([])
                for i in 0..<50 {
                    done.enter()
                    store.writeAsync(
                        { a in
                            c.expect(currentThreadID() != caller, "writeAsync's block ran on the calling thread")
                            try a.insert(Numbered(id: 1, value: "v\(i)"))
                        },
                        completion: { error in
                            c.expect(error == nil, "completion \(i): \(String(describing: error))")
                            let committed = try? store.read { try $0.item(ofType: Numbered.self, id: 1) }
                            c.expect(committed != nil, "completion \(i) ran before its commit was visible")
                            completions.update { $0.append(i) }
                            done.leave()
                        })
                }
                c.wait(done, "50 writeAsync completions")
                c.expectEqual(try store.read { try $0.item(ofType: Numbered.self, id: 1) }?.value, "v49", "the last write queued wins")
                c.expectEqual(completions.value.count, 50)
            },
            ConformanceCase(
                "concurrency.writeSyncAfterWriteAsyncKeepsIssueOrder",
                "Rule 8: a writeSync waits for the asynchronous writes issued before it from the same thread."
            ) { c in
                let store = try c.openStore()
                for i in 0..<20 {
                    store.writeAsync({ a in try a.insert(Numbered(id: 7, value: "async\(i)")) }, completion: nil)
                }
                try store.writeSync { a in try a.insert(Numbered(id: 7, value: "sync")) }
                c.expectEqual(try store.read { try $0.item(ofType: Numbered.self, id: 7) }?.value, "sync")
            },
            ConformanceCase(
                async: "concurrency.asyncTwinsKeepIssueOrder",
                "Rules 8 and 12: `await write` is queued with writeAsync blocks, in issue order, and resumes once committed."
            ) { c in
                let store = try c.openStore()
                store.writeAsync(
                    { a in
                        Thread.sleep(forTimeInterval: 0.05)
                        try a.insert(Numbered(id: 1, value: "first"))
                    }, completion: nil)
                let seen = try await store.write { a -> String? in
                    try a.item(ofType: Numbered.self, id: 1)?.value
                }
                c.expectEqual(seen, "first", "the async write ran after the writeAsync issued before it")
                let value = try await store.read { a in try a.item(ofType: Numbered.self, id: 1)?.value }
                c.expectEqual(value, "first")
            },
            ConformanceCase(
                async: "concurrency.asyncTwins",
                "Rule 12: async read and write run their blocks, return their values, rethrow their errors unchanged."
            ) { c in
                let store = try c.openStore()
                let id = try await store.write { a -> String in
                    try a.insert(Restaurant(id: "a", name: "A", rating: 1))
                    return "a"
                }
                let got = try await store.read { a in try a.item(ofType: Restaurant.self, id: id) }
                c.expectEqual(got?.name, "A")
                do {
                    _ = try await store.write { a -> Int in
                        try a.insert(Restaurant(id: "b", name: "B", rating: 1))
                        throw Marker(n: 5)
                    }
                    c.fail("expected the block's error")
                } catch {
                    c.expectEqual(error as? Marker, Marker(n: 5), "the block's error, unchanged")
                }
                do {
                    _ = try await store.read { _ -> Int in throw Marker(n: 6) }
                    c.fail("expected the block's error")
                } catch {
                    c.expectEqual(error as? Marker, Marker(n: 6), "the block's error, unchanged")
                }
                let names = try await store.read { try $0.items(forRequest: DataStoreRequest(itemType: Restaurant.self)).map(\.id) }
                c.expectEqual(names, ["a"], "the throwing async write committed nothing")
            },
            ConformanceCase(
                "concurrency.nestedWriteThrowsReentrantWrite",
                "Rule 10: writeSync, tearDown or merge inside a write block of the same store throws .reentrantWrite instead of deadlocking."
            ) { c in
                let store = try c.openStore()
                try store.writeSync { a in
                    try a.insert(restaurant(1))
                    c.expectThrows(.reentrantWrite, "writeSync in writeSync") { try store.writeSync { _ in 1 } }
                    c.expectThrows(.reentrantWrite, "tearDown in writeSync") { try store.tearDown() }
                }
                let done = DispatchSemaphore(value: 0)
                store.writeAsync(
                    { _ in
                        c.expectThrows(.reentrantWrite, "writeSync in writeAsync") { try store.writeSync { _ in 1 } }
                    }, completion: { _ in done.signal() })
                c.wait(done, "writeAsync")
                c.expectEqual(try countOf(Restaurant.self, in: store), 1, "the outer block committed")
            },
            ConformanceCase(
                "concurrency.accessorsExpireWithTheirBlock",
                "Rule 11: an accessor used after its block returned throws .accessorExpired."
            ) { c in
                let store = try c.openStore()
                var escaped: (any DataStoreReadAccessor)?
                try store.read { escaped = $0 }
                c.expectThrows(.accessorExpired, "read accessor") {
                    try escaped?.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self))
                }
                c.expectThrows(.accessorExpired, "read accessor") {
                    try escaped?.items(forRequest: DataStoreRequest(itemType: Restaurant.self))
                }
                var escapedW: (any DataStoreReadWriteAccessor)?
                try store.writeSync { escapedW = $0 }
                c.expectThrows(.accessorExpired, "write accessor") { try escapedW?.insert(restaurant(1)) }
                c.expectThrows(.accessorExpired, "write accessor") { try escapedW?.item(ofType: Restaurant.self, id: "r001") }
                c.expectEqual(try countOf(Restaurant.self, in: store), 0)
            },
        ]
    }
}
