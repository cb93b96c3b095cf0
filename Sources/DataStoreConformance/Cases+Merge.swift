import Foundation
import LogStore

// Child Stores article, merging: one atomic transaction, only changes since the base, delete-all
// as "what the child saw", the three policies, errors, and no deadlock with concurrent writes.

extension DataStoreConformance {
    static var mergeCases: [ConformanceCase] {
        [
            ConformanceCase(
                "merge.twiceAppliesOnlyLaterChanges",
                "Merging: a child rebases onto the parent after a merge, so merging again applies only later changes.",
                requires: .childStores
            ) { c in
                let parent = try c.openStore()
                let child = try parent.makeChildDataStore()
                try child.writeSync { try $0.insert(restaurant(1)) }
                try parent.merge(child)
                try parent.writeSync { try $0.insert(Restaurant(id: "r001", name: "parent edit", rating: 9)) }
                try child.writeSync { try $0.insert(restaurant(2)) }
                try parent.merge(child, policy: .failOnConflict)  // r001 is not sent again: no conflict
                c.expectEqual(try parent.read { try $0.item(ofType: Restaurant.self, id: "r001") }?.name, "parent edit")
                c.expectEqual(try countOf(Restaurant.self, in: parent), 2)
                c.expectEqual(
                    try child.read { try $0.item(ofType: Restaurant.self, id: "r001") }?.name, "parent edit",
                    "the child rebased onto the parent's state")
            },
            ConformanceCase(
                "merge.deletesAndDeleteAllMeanWhatTheChildSaw",
                "Merging: deletes are applied; a delete-all in a child deletes the items the child saw at its base, not items the parent added since.",
                requires: .childStores
            ) { c in
                let parent = try c.openStore()
                try parent.writeSync { a in for i in 0..<5 { try a.insert(restaurant(i)) } }
                let child = try parent.makeChildDataStore()
                try child.writeSync { a in
                    try a.deleteItem(ofType: Restaurant.self, id: "r001")
                    try a.insert(Numbered(id: 1, value: "x"))
                }
                try parent.merge(child)
                c.expectEqual(try countOf(Restaurant.self, in: parent), 4)
                try child.writeSync { a in c.expectEqual(try a.deleteAllItems(ofType: Restaurant.self), 4) }
                try parent.writeSync { try $0.insert(restaurant(99)) }
                try parent.merge(child)
                c.expectEqual(try allOf(Restaurant.self, in: parent).map(\.id), ["r099"])
                c.expectEqual(try countOf(Numbered.self, in: parent), 1)
            },
            ConformanceCase(
                "merge.conflictPolicies",
                "Merging: an item changed in the child and, after the child's base, in the parent conflicts. childWins applies the child's version or deletion; parentWins keeps the parent's; failOnConflict throws .mergeConflict listing type/id and changes nothing.",
                requires: .childStores
            ) { c in
                for policy in [MergePolicy.childWins, .parentWins, .failOnConflict] {
                    let parent = try c.openStore()
                    try parent.writeSync { a in
                        try a.insert(Restaurant(id: "c", name: "base", rating: 0))
                        try a.insert(Restaurant(id: "d", name: "base", rating: 0))
                        try a.insert(Restaurant(id: "f", name: "base", rating: 0))
                        try a.insert(Restaurant(id: "g", name: "base", rating: 0))
                    }
                    let child = try parent.makeChildDataStore()
                    try child.writeSync { a in
                        try a.insert(Restaurant(id: "c", name: "child", rating: 1))
                        try a.deleteItem(ofType: Restaurant.self, id: "d")
                        try a.insert(Restaurant(id: "e", name: "child only", rating: 1))
                        try a.insert(Restaurant(id: "f", name: "child", rating: 1))
                        try a.insert(Restaurant(id: "h", name: "child", rating: 1))
                    }
                    try parent.writeSync { a in
                        try a.insert(Restaurant(id: "c", name: "parent", rating: 2))
                        try a.insert(Restaurant(id: "d", name: "parent", rating: 2))
                        try a.deleteItem(ofType: Restaurant.self, id: "f")  // deleted in the parent, edited in the child
                        try a.insert(Restaurant(id: "g", name: "parent", rating: 2))  // not touched by the child
                        try a.insert(Restaurant(id: "h", name: "parent", rating: 2))  // inserted on both sides
                    }
                    func name(_ id: String) throws -> String? { try parent.read { try $0.item(ofType: Restaurant.self, id: id) }?.name }
                    switch policy {
                    case .childWins:
                        try parent.merge(child, policy: policy)
                        c.expectEqual(try name("c"), "child", "childWins: c")
                        c.expectEqual(try name("d"), nil, "childWins: d deleted")
                        c.expectEqual(try name("e"), "child only", "childWins: e")
                        c.expectEqual(try name("f"), "child", "childWins: f")
                        c.expectEqual(try name("g"), "parent", "childWins: g untouched by the child")
                        c.expectEqual(try name("h"), "child", "childWins: h")
                    case .parentWins:
                        try parent.merge(child, policy: policy)
                        c.expectEqual(try name("c"), "parent", "parentWins: c")
                        c.expectEqual(try name("d"), "parent", "parentWins: d")
                        c.expectEqual(try name("e"), "child only", "parentWins: e (no conflict)")
                        c.expectEqual(try name("f"), nil, "parentWins: f stays deleted")
                        c.expectEqual(try name("g"), "parent", "parentWins: g")
                        c.expectEqual(try name("h"), "parent", "parentWins: h")
                    case .failOnConflict:
                        do {
                            try parent.merge(child, policy: policy)
                            c.fail("failOnConflict merged conflicting changes")
                        } catch let e as LogStoreError {
                            c.expectEqual(e.code, .mergeConflict)
                            c.expectEqual(
                                Set(e.conflicts.map(\.description)), ["Restaurant/c", "Restaurant/d", "Restaurant/f", "Restaurant/h"])
                        }
                        c.expect(try name("e") == nil, "failOnConflict changed the parent")
                        c.expectEqual(try name("c"), "parent")
                        // The child keeps its changes: resolve and merge again.
                        try parent.merge(child, policy: .childWins)
                        c.expectEqual(try name("c"), "child", "after resolving")
                    }
                }
            },
            ConformanceCase(
                "merge.aRewriteWithTheSameValueIsAConflict",
                "Merging: the parent writing an item after the child's base is a change even if the bytes are the same (failOnConflict reports it).",
                requires: .childStores
            ) { c in
                let parent = try c.openStore()
                try parent.writeSync { try $0.insert(restaurant(1)) }
                let child = try parent.makeChildDataStore()
                try child.writeSync { try $0.insert(Restaurant(id: "r001", name: "child", rating: 1)) }
                try parent.writeSync { try $0.insert(restaurant(1)) }
                if c.capabilities.contains(.isChildStore) {
                    // A child parent compares values: an identical rewrite is no change there.
                    try parent.merge(child, policy: .failOnConflict)
                } else {
                    c.expectThrows(.mergeConflict, "the rewrite") { try parent.merge(child, policy: .failOnConflict) }
                }
            },
            ConformanceCase(
                "merge.nonChildThrowsNotAChildAndChangesNothing",
                "Merging: merging a store that is not this store's child (another store, a grandchild, the store itself) throws .notAChild and changes nothing.",
                requires: .childStores
            ) { c in
                let parent = try c.openStore()
                let other = try c.openStore()
                c.expectThrows(.notAChild, "another store") { try parent.merge(other) }
                let child = try parent.makeChildDataStore()
                let grandchild = try child.makeChildDataStore()
                try grandchild.writeSync { try $0.insert(restaurant(1)) }
                c.expectThrows(.notAChild, "a grandchild") { try parent.merge(grandchild) }
                c.expectThrows(.notAChild, "itself") { try parent.merge(parent) }
                let otherChild = try other.makeChildDataStore()
                try otherChild.writeSync { try $0.insert(restaurant(2)) }
                c.expectThrows(.notAChild, "another store's child") { try parent.merge(otherChild) }
                c.expectEqual(try countOf(Restaurant.self, in: parent), 0)
            },
            ConformanceCase(
                "merge.isAtomicForParentReaders",
                "Merging: readers of the parent see all of a merge or none of it.",
                requires: .childStores
            ) { c in
                let parent = try c.openStore()
                let child = try parent.makeChildDataStore()
                try child.writeSync { a in for i in 0..<500 { try a.insert(Numbered(id: i, value: "c")) } }
                let stop = SharedBox(false)
                let bad = SharedBox(0)
                let group = DispatchGroup()
                DispatchQueue.global().async(group: group) {
                    while !stop.value {
                        let n = (try? countOf(Numbered.self, in: parent)) ?? -1
                        if n != 0 && n != 500 { bad.update { $0 += 1 } }
                    }
                }
                try parent.merge(child)
                stop.value = true
                c.wait(group, "the reader")
                c.expectEqual(bad.value, 0, "reads that saw part of the merge")
                c.expectEqual(try countOf(Numbered.self, in: parent), 500)
            },
            ConformanceCase(
                "merge.mergedChangesAreDurable",
                "Merging: a merge is one durable write of the parent.",
                requires: [.childStores, .persistsAcrossReopen]
            ) { c in
                let location = try c.makeLocation()
                let parent = try location.makeStore()
                try parent.setup()
                let child = try parent.makeChildDataStore()
                try child.writeSync { try $0.insert(restaurant(1)) }
                try parent.merge(child)
                try parent.tearDown()
                let again = try location.makeStore()
                try again.setup()
                c.expectEqual(try countOf(Restaurant.self, in: again), 1)
                try again.tearDown()
            },
            ConformanceCase(
                "merge.insideWriteBlockThrowsReentrantWrite",
                "Rule 10 with merges: merge(_:) inside a write block of the parent or of the child throws .reentrantWrite.",
                requires: .childStores
            ) { c in
                let parent = try c.openStore()
                let child = try parent.makeChildDataStore()
                try child.writeSync { try $0.insert(restaurant(1)) }
                try parent.writeSync { _ in c.expectThrows(.reentrantWrite, "merge in the parent's block") { try parent.merge(child) } }
                try child.writeSync { _ in c.expectThrows(.reentrantWrite, "merge in the child's block") { try parent.merge(child) } }
                try parent.merge(child)
                c.expectEqual(try countOf(Restaurant.self, in: parent), 1)
            },
            ConformanceCase(
                "merge.noDeadlockWithParentBlocksWritingToTheChild",
                "Merging: merges racing parent write blocks that write to the child never deadlock.",
                requires: .childStores
            ) { c in
                let parent = try c.openStore()
                let child = try parent.makeChildDataStore()
                let group = DispatchGroup()
                for i in 0..<20 {
                    DispatchQueue.global().async(group: group) {
                        try? parent.writeSync { _ in try child.writeSync { try $0.insert(Numbered(id: i, value: "c")) } }
                    }
                    DispatchQueue.global().async(group: group) { try? parent.merge(child) }
                }
                c.wait(group, "merges and parent blocks writing to the child")
                try parent.merge(child)
                c.expectEqual(try countOf(Numbered.self, in: parent), 20)
                let done = DispatchSemaphore(value: 0)
                parent.writeAsync(
                    { _ in try child.writeSync { try $0.insert(Numbered(id: 100, value: "x")) } }, completion: { _ in done.signal() })
                let merged = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    try? parent.merge(child)
                    merged.signal()
                }
                c.wait(merged, "a merge racing a queued parent write that writes to the child")
                c.wait(done, "the queued parent write")
            },
            ConformanceCase(
                "merge.includesWritesQueuedOnTheChildBeforeIt",
                "Rule 8 with merges: a merge includes the writes queued on the child before it.",
                requires: .childStores
            ) { c in
                let parent = try c.openStore()
                let child = try parent.makeChildDataStore()
                child.writeAsync(
                    { a in
                        Thread.sleep(forTimeInterval: 0.05)
                        try a.insert(Numbered(id: 1, value: "slow"))
                    }, completion: nil)
                child.writeAsync({ try $0.insert(Numbered(id: 2, value: "fast")) }, completion: nil)
                try parent.merge(child)
                c.expectEqual(try countOf(Numbered.self, in: parent), 2)
            },
        ]
    }
}
