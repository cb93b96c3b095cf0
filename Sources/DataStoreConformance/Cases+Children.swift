import Foundation
import LogStore

// Child Stores article: a snapshot at creation, isolated writes, full DataStore semantics,
// lifecycle tied to the parent.

extension DataStoreConformance {
    static var childCases: [ConformanceCase] {
        [
            ConformanceCase(
                "children.justPersistScenario",
                "Child Stores: a child's writes are invisible to the parent until merge(_:) applies them; the child keeps its data after the merge.",
                requires: .childStores
            ) { c in
                let parent = try c.openStore()
                let child = try parent.makeChildDataStore()
                try child.setup()  // harmless
                c.expectEqual(try countOf(Restaurant.self, in: child), 0)
                try child.writeSync { try $0.insert(restaurant(1)) }
                c.expectEqual(try countOf(Restaurant.self, in: parent), 0, "parent before merge")
                c.expectEqual(try countOf(Restaurant.self, in: child), 1)
                try parent.merge(child)
                c.expectEqual(try countOf(Restaurant.self, in: parent), 1, "parent after merge")
                c.expectEqual(try countOf(Restaurant.self, in: child), 1, "child after merge")
                try child.tearDown()
            },
            ConformanceCase(
                "children.readOnlyTheParentSnapshotAtCreation",
                "Child Stores: a child reads its parent's committed state as of its creation, whatever the parent writes later (inserts, replaces, deletes, delete-alls, nuke, types the child had not read yet); requests of every shape answer over that snapshot plus the child's own writes.",
                requires: .childStores
            ) { c in
                let parent = try c.openStore()
                try seedRestaurants(parent)
                try parent.writeSync { a in for i in 0..<5 { try a.insert(Numbered(id: i, value: "base\(i)")) } }
                let child = try parent.makeChildDataStore()
                // The parent changes everything after the child was made.
                try parent.writeSync { a in
                    try a.insert(Restaurant(id: "r00", name: "changed", rating: 9))
                    try a.insert(Restaurant(id: "r99", name: "new", rating: 4))
                    try a.deleteItem(ofType: Restaurant.self, id: "r01")
                    _ = try a.deleteAllItems(ofType: Numbered.self)
                    try a.insert(Tagged(id: UUID(), note: "parent only"))
                }
                try parent.nuke()
                try parent.writeSync { try $0.insert(restaurant(500)) }
                // The child still sees its base...
                c.expectEqual(try countOf(Restaurant.self, in: child), 20)
                c.expectEqual(try countOf(Numbered.self, in: child), 5)
                c.expectEqual(try countOf(Tagged.self, in: child), 0)
                c.expectEqual(try child.read { try $0.item(ofType: Restaurant.self, id: "r00") }?.name, "N0")
                c.expectEqual(try child.read { try $0.item(ofType: Numbered.self, id: 3) }?.value, "base3")
                // ...plus its own writes, through every request shape.
                try child.writeSync { a in
                    try a.insert(Restaurant(id: "r05", name: "child edit", rating: 4))
                    try a.insert(Restaurant(id: "c1", name: "child new", rating: 4))
                    try a.deleteItem(ofType: Restaurant.self, id: "r02")
                }
                var req = DataStoreRequest(itemType: Restaurant.self)
                req.predicate = #Predicate<Restaurant> { $0.rating == 4 }
                c.expectEqual(try child.read { try $0.items(forRequest: req) }.map(\.id), ["c1", "r04", "r05", "r09", "r14", "r19"])
                c.expectEqual(try child.read { try $0.countItems(forRequest: req) }, 6)
                let byName = SortDescriptor(\Restaurant.name, order: .reverse)
                let rated4 = try child.read { try $0.items(forRequest: req) }
                req.sortDescriptors = [byName]
                req.limit = 2
                let expected = rated4.sorted {
                    byName.compare($0, $1) == .orderedAscending || (byName.compare($0, $1) == .orderedSame && $0.id < $1.id)
                }
                c.expectEqual(try child.read { try $0.items(forRequest: req) }.map(\.id), expected.prefix(2).map(\.id))
                var page = DataStoreRequest(itemType: Restaurant.self)
                page.offset = 1
                page.limit = 3
                c.expectEqual(try child.read { try $0.items(forRequest: page) }.map(\.id), ["r00", "r01", "r03"])
                if c.capabilities.contains(.recordAccess) {
                    c.expectEqual(try child.read { try $0.itemTypeNames() }, ["Numbered", "Restaurant"], "the child's types")
                }
                // The parent is unaffected by the child.
                c.expectEqual(try allOf(Restaurant.self, in: parent).map(\.id), ["r500"])
            },
            ConformanceCase(
                "children.writesHaveFullSemantics",
                "Child Stores: a child has the full DataStore interface: rollback on throw, writeAsync, reentrancy errors, async twins.",
                requires: .childStores
            ) { c in
                let parent = try c.openStore()
                let child = try parent.makeChildDataStore()
                c.expectThrows(Marker()) {
                    try child.writeSync { a in
                        try a.insert(restaurant(1))
                        throw Marker()
                    }
                }
                c.expectEqual(try countOf(Restaurant.self, in: child), 0)
                let done = DispatchSemaphore(value: 0)
                child.writeAsync(
                    { try $0.insert(restaurant(2)) },
                    completion: { e in
                        c.expect(e == nil, "child writeAsync: \(String(describing: e))")
                        done.signal()
                    })
                c.wait(done, "the child's writeAsync")
                c.expectEqual(try countOf(Restaurant.self, in: child), 1)
                try child.writeSync { _ in
                    c.expectThrows(.reentrantWrite, "writeSync in a child's write block") { try child.writeSync { _ in 1 } }
                }
                try parent.writeSync { _ in
                    // Writing to the child from a parent's write block is allowed (different stores).
                    try child.writeSync { try $0.insert(restaurant(3)) }
                }
                c.expectEqual(try countOf(Restaurant.self, in: child), 2)
            },
            ConformanceCase(
                "children.tearDownOfUnmergedChildDiscardsIt",
                "Child Stores: tearing down an unmerged child discards its changes; setting it up again starts an empty overlay over the parent's current state.",
                requires: .childStores
            ) { c in
                let parent = try c.openStore()
                let child = try parent.makeChildDataStore()
                try child.writeSync { try $0.insert(restaurant(1)) }
                try child.tearDown()
                c.expectThrows(.notOpen, "a torn-down child") { try child.read { _ in 1 } }
                try parent.writeSync { try $0.insert(restaurant(7)) }
                try child.setup()
                c.expectEqual(try allOf(Restaurant.self, in: child).map(\.id), ["r007"], "the new overlay's base")
                try parent.merge(child)
                c.expectEqual(try allOf(Restaurant.self, in: parent).map(\.id), ["r007"])
            },
            ConformanceCase(
                "children.tearingDownParentFailsChildrenClearly",
                "Child Stores: after the parent's tearDown, its children and theirs throw .parentClosed on every use.",
                requires: .childStores
            ) { c in
                let parent = try c.openStore()
                let child = try parent.makeChildDataStore()
                let grandchild = try child.makeChildDataStore()
                try child.writeSync { try $0.insert(restaurant(1)) }
                try parent.tearDown()
                c.expectThrows(.parentClosed, "child read") { try child.read { _ in 1 } }
                c.expectThrows(.parentClosed, "grandchild write") { try grandchild.writeSync { try $0.insert(restaurant(1)) } }
                c.expectThrows(.parentClosed, "child setup") { try child.setup() }
                c.expectThrows(.notOpen, "merge into a torn-down parent") { try parent.merge(child) }
            },
            ConformanceCase(
                "children.nestedChildrenCarryChangesUp",
                "Child Stores: a grandchild merges into its child; merging the child then carries the grandchild's changes up.",
                requires: .childStores
            ) { c in
                let parent = try c.openStore()
                let child = try parent.makeChildDataStore()
                try child.writeSync { try $0.insert(restaurant(1)) }
                let grandchild = try child.makeChildDataStore()
                c.expectEqual(try countOf(Restaurant.self, in: grandchild), 1)
                try grandchild.writeSync { try $0.insert(restaurant(2)) }
                c.expectEqual(try countOf(Restaurant.self, in: child), 1)
                try child.merge(grandchild)
                c.expectEqual(try countOf(Restaurant.self, in: child), 2)
                c.expectEqual(try countOf(Restaurant.self, in: parent), 0)
                try parent.merge(child)
                c.expectEqual(try countOf(Restaurant.self, in: parent), 2)
            },
            ConformanceCase(
                "children.manyChildrenAndLargeChild",
                "Child Stores: many children of one parent are independent; a child holding thousands of changes merges them all as one transaction.",
                requires: .childStores
            ) { c in
                let parent = try c.openStore()
                let children = try (0..<8).map { _ in try parent.makeChildDataStore() }
                for (i, child) in children.enumerated() {
                    try child.writeSync { try $0.insert(Numbered(id: i, value: "child \(i)")) }
                }
                for (i, child) in children.enumerated() {
                    c.expectEqual(try allOf(Numbered.self, in: child).map(\.id), [i], "child \(i) sees only its own write")
                }
                for child in children { try parent.merge(child) }
                c.expectEqual(try countOf(Numbered.self, in: parent), 8)
                let big = try parent.makeChildDataStore()
                try big.writeSync { a in
                    for i in 0..<3000 { try a.insert(Restaurant(id: "s\(i)", name: String(repeating: "n", count: 100), rating: i)) }
                }
                try big.writeSync { a in for i in 0..<500 { try a.deleteItem(ofType: Restaurant.self, id: "s\(i)") } }
                c.expectEqual(try countOf(Restaurant.self, in: big), 2500)
                c.expectEqual(try big.read { try $0.item(ofType: Restaurant.self, id: "s2999") }?.rating, 2999)
                try parent.merge(big)
                c.expectEqual(try countOf(Restaurant.self, in: parent), 2500)
                try big.tearDown()
            },
        ]
    }
}
