import Foundation
import LogStore

// Lifecycle: setup and tearDown, errors before and after, the lock, durability across a reopen.

extension DataStoreConformance {
    static var lifecycleCases: [ConformanceCase] {
        [
            ConformanceCase(
                "lifecycle.useBeforeSetupAndAfterTearDownThrowsNotOpen",
                "Using a store before setup() or after tearDown() throws .notOpen (never crashes); setup and tearDown are idempotent.",
                requires: [],
                { c in
                    let location = try c.makeLocation()
                    let store = try location.makeStore()
                    if !c.capabilities.contains(.isChildStore) {
                        c.expectThrows(.notOpen, "read before setup") { try store.read { _ in 1 } }
                        c.expectThrows(.notOpen, "writeSync before setup") { try store.writeSync { _ in 1 } }
                        c.expectThrows(.notOpen, "nuke before setup") { try store.nuke() }
                        c.expectThrows(.notOpen, "makeChildDataStore before setup") { try store.makeChildDataStore() }
                        let done = DispatchSemaphore(value: 0)
                        store.writeAsync(
                            { _ in c.fail("a writeAsync block ran on a store that is not set up") },
                            completion: { e in
                                c.expectEqual((e as? LogStoreError)?.code, .notOpen, "writeAsync's completion before setup")
                                done.signal()
                            })
                        c.wait(done, "writeAsync's completion")
                    }
                    try store.setup()
                    try store.setup()
                    try store.writeSync { try $0.insert(restaurant(1)) }
                    try store.tearDown()
                    try store.tearDown()
                    c.expectThrows(.notOpen, "read after tearDown") { try store.read { _ in 1 } }
                    c.expectThrows(.notOpen, "writeSync after tearDown") { try store.writeSync { _ in 1 } }
                    c.expectThrows(.notOpen, "items after tearDown") { try countOf(Restaurant.self, in: store) }
                }),
            ConformanceCase(
                "lifecycle.tearDownFinishesQueuedWrites",
                "tearDown() finishes the asynchronous writes queued before it; their completions report success."
            ) { c in
                let location = try c.makeLocation()
                let store = try location.makeStore()
                try store.setup()
                let failures = SharedBox(0)
                let group = DispatchGroup()
                for i in 0..<20 {
                    group.enter()
                    store.writeAsync(
                        { try $0.insert(Numbered(id: i, value: "q")) },
                        completion: { e in
                            if e != nil { failures.update { $0 += 1 } }
                            group.leave()
                        })
                }
                try store.tearDown()
                c.wait(group, "the queued writes' completions")
                c.expectEqual(failures.value, 0, "queued writes that failed")
                if c.capabilities.contains(.persistsAcrossReopen) {
                    let again = try location.makeStore()
                    try again.setup()
                    c.expectEqual(try countOf(Numbered.self, in: again), 20, "queued writes after the reopen")
                    try again.tearDown()
                }
            },
            ConformanceCase(
                "lifecycle.secondStoreOnSamePlaceIsLocked",
                "Rule: one open store per place. A second store object on it fails setup() with .locked until the first is torn down.",
                requires: .exclusiveLock
            ) { c in
                let location = try c.makeLocation()
                let a = try location.makeStore()
                try a.setup()
                try a.writeSync { try $0.insert(restaurant(1)) }
                let b = try location.makeStore()
                c.expectThrows(.locked, "the second store's setup") { try b.setup() }
                c.expectThrows(.notOpen, "the refused store") { try b.read { _ in 1 } }
                try a.writeSync { try $0.insert(restaurant(2)) }  // the first store is unaffected
                try a.tearDown()
                try b.setup()
                c.expectEqual(try countOf(Restaurant.self, in: b), 2)
                try b.tearDown()
            },
            ConformanceCase(
                "durability.committedWritesSurviveReopen",
                "After tearDown and a new setup, every committed write (inserts, replaces, deletes, delete-alls, nuke) is there, and nothing that was rolled back.",
                requires: .persistsAcrossReopen
            ) { c in
                let location = try c.makeLocation()
                let store = try location.makeStore()
                try store.setup()
                try store.writeSync { a in for i in 0..<100 { try a.insert(restaurant(i, rating: i % 5)) } }
                try store.writeSync { a in
                    try a.deleteItem(ofType: Restaurant.self, id: "r005")
                    try a.insert(Restaurant(id: "r006", name: "renamed", rating: 9))
                    try a.insert(Numbered(id: 1, value: "one"))
                    try a.insert(Tagged(id: UUID(), note: "t"))
                }
                try store.writeSync { a in _ = try a.deleteAllItems(ofType: Tagged.self) }
                _ = try? store.writeSync { a in
                    try a.insert(restaurant(500))
                    throw Marker()
                }
                try store.tearDown()
                let again = try location.makeStore()
                try again.setup()
                c.expectEqual(try countOf(Restaurant.self, in: again), 99)
                c.expect(try again.read { try $0.item(ofType: Restaurant.self, id: "r005") } == nil, "a deleted item came back")
                c.expectEqual(try again.read { try $0.item(ofType: Restaurant.self, id: "r006") }?.name, "renamed")
                c.expect(try again.read { try $0.item(ofType: Restaurant.self, id: "r500") } == nil, "a rolled-back insert is there")
                c.expectEqual(try countOf(Numbered.self, in: again), 1)
                c.expectEqual(try countOf(Tagged.self, in: again), 0)
                try again.nuke()
                try again.tearDown()
                let third = try location.makeStore()
                try third.setup()
                c.expectEqual(try countOf(Restaurant.self, in: third), 0, "nuke is durable")
                c.expectEqual(try countOf(Numbered.self, in: third), 0, "nuke is durable")
                try third.writeSync { try $0.insert(restaurant(1)) }
                try third.tearDown()
            },
            ConformanceCase(
                "durability.asyncWritesSurviveReopen",
                "Writes whose writeAsync completion reported success, and async writes that returned, survive a reopen.",
                requires: .persistsAcrossReopen
            ) { c in
                let location = try c.makeLocation()
                let store = try location.makeStore()
                try store.setup()
                let done = DispatchSemaphore(value: 0)
                store.writeAsync(
                    { try $0.insert(Numbered(id: 1, value: "async")) },
                    completion: { e in
                        c.expect(e == nil, "writeAsync failed: \(String(describing: e))")
                        done.signal()
                    })
                c.wait(done, "writeAsync")
                try store.tearDown()
                let again = try location.makeStore()
                try again.setup()
                c.expectEqual(try again.read { try $0.item(ofType: Numbered.self, id: 1) }?.value, "async")
                try again.tearDown()
            },
            ConformanceCase(
                "durability.writesRacingTearDownNeverReportFailureForCommittedData",
                "A write that reported failure while the store was torn down under it is not committed.",
                requires: .persistsAcrossReopen
            ) { c in
                let location = try c.makeLocation()
                let store = try location.makeStore()
                try store.setup()
                let failed = SharedBox<[Int]>([])
                let group = DispatchGroup()
                for t in 0..<4 {
                    DispatchQueue.global().async(group: group) {
                        for i in 0..<40 {
                            let id = t * 1000 + i
                            do { try store.writeSync { try $0.insert(Numbered(id: id, value: "v")) } } catch {
                                failed.update { $0.append(id) }
                            }
                        }
                    }
                }
                Thread.sleep(forTimeInterval: 0.01)
                try store.tearDown()
                c.wait(group, "the writers")
                let again = try location.makeStore()
                try again.setup()
                for id in failed.value {
                    c.expect(
                        try again.read { try $0.item(ofType: Numbered.self, id: id) } == nil,
                        "write \(id) reported failure but was committed")
                }
                try again.tearDown()
            },
        ]
    }
}
