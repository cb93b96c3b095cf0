import Foundation
import LogStore

// Writes: rollback on throw, the block's error unchanged, nuke.

extension DataStoreConformance {
    static var writeCases: [ConformanceCase] {
        [
            ConformanceCase(
                "writes.throwingBlockCommitsNothing",
                "A write block that throws commits nothing; its error reaches the caller unchanged (writeSync, writeAsync, read)."
            ) { c in
                let store = try c.openStore()
                try store.writeSync { try $0.insert(restaurant(9)) }
                c.expectThrows(Marker(n: 7)) {
                    try store.writeSync { a in
                        try a.insert(restaurant(1))
                        try a.deleteItem(ofType: Restaurant.self, id: "r009")
                        _ = try a.deleteAllItems(ofType: Numbered.self)
                        throw Marker(n: 7)
                    }
                }
                c.expectEqual(try allOf(Restaurant.self, in: store).map(\.id), ["r009"], "after a throwing writeSync")
                let done = DispatchSemaphore(value: 0)
                store.writeAsync(
                    { a in
                        try a.insert(restaurant(2))
                        throw Marker(n: 9)
                    },
                    completion: { e in
                        c.expectEqual(e as? Marker, Marker(n: 9), "writeAsync's completion error")
                        done.signal()
                    })
                c.wait(done, "writeAsync")
                c.expectEqual(try allOf(Restaurant.self, in: store).map(\.id), ["r009"], "after a throwing writeAsync")
                c.expectThrows(Marker(n: 3)) { try store.read { _ in throw Marker(n: 3) } }
                // The store is still usable.
                try store.writeSync { try $0.insert(restaurant(3)) }
                c.expectEqual(try countOf(Restaurant.self, in: store), 2)
            },
            ConformanceCase(
                "writes.replaceByIdAndDeleteResults",
                "insert replaces the item with the same id; delete and deleteItem say whether it existed; deleteAllItems returns how many there were."
            ) { c in
                let store = try c.openStore()
                try store.writeSync { a in
                    try a.insert(Restaurant(id: "x", name: "first", rating: 1))
                    try a.insert(Restaurant(id: "x", name: "second", rating: 2))
                }
                c.expectEqual(try allOf(Restaurant.self, in: store), [Restaurant(id: "x", name: "second", rating: 2)])
                try store.writeSync { a in
                    c.expect(try a.deleteItem(ofType: Restaurant.self, id: "x"), "deleteItem of a stored item")
                    c.expect(try !a.deleteItem(ofType: Restaurant.self, id: "x"), "deleteItem of a missing item")
                    for i in 0..<20 { try a.insert(restaurant(i)) }
                }
                c.expectEqual(try store.writeSync { try $0.deleteAllItems(ofType: Restaurant.self) }, 20)
                c.expectEqual(try store.writeSync { try $0.deleteAllItems(ofType: Restaurant.self) }, 0)
                c.expectEqual(try countOf(Restaurant.self, in: store), 0)
            },
            ConformanceCase(
                "writes.nukeDeletesEveryTypeAndStoreStaysUsable",
                "nuke() deletes every item of every type as one write; the store stays usable."
            ) { c in
                let store = try c.openStore()
                try store.writeSync { a in
                    try a.insert(restaurant(1))
                    try a.insert(Numbered(id: 1, value: "x"))
                    try a.insert(Tagged(id: UUID(), note: nil))
                }
                try store.nuke()
                c.expectEqual(try countOf(Numbered.self, in: store), 0)
                c.expectEqual(try countOf(Restaurant.self, in: store), 0)
                c.expectEqual(try countOf(Tagged.self, in: store), 0)
                try store.writeSync { try $0.insert(restaurant(2)) }
                c.expectEqual(try countOf(Restaurant.self, in: store), 1)
            },
            ConformanceCase(
                "writes.idTypes",
                "Ids of type String, UUID, Int, Int64 and UInt64 store and read back."
            ) { c in
                let store = try c.openStore()
                let u = UUID()
                try store.writeSync { a in
                    try a.insert(Tagged(id: u, note: nil))
                    try a.insert(Wide(id: -5, v: 1))
                    try a.insert(Wide(id: 5, v: 2))
                    try a.insert(Numbered(id: -1, value: "neg"))
                    try a.insert(Unsigned(id: .max))
                }
                c.expectEqual(try store.read { try $0.item(ofType: Tagged.self, id: u) }?.id, u)
                c.expectEqual(try allOf(Wide.self, in: store).map(\.id), [-5, 5])
                c.expectEqual(try store.read { try $0.item(ofType: Numbered.self, id: -1) }?.value, "neg")
                c.expectEqual(try store.read { try $0.item(ofType: Unsigned.self, id: .max) }?.id, .max)
                c.expect(try store.read { try $0.item(ofType: Tagged.self, id: UUID()) } == nil, "an unknown UUID")
            },
        ]
    }
}
