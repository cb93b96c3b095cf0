import Foundation
import LogStore

// Secondary indexes (the "Indexes and Query Performance" article): unique indexes refuse equal
// values and roll the write back. (Indexed answers equal Swift's: `predicates.indexed...`.)

/// An item with a unique index on an optional name.
struct UniqueName: DataStoreItem, Equatable {
    static let itemType = "UniqueName"
    static let indexes: [DataStoreIndex<UniqueName>] = [.init(\.name, unique: true)]
    var id: Int
    var name: String?
}

extension DataStoreConformance {
    static var indexCases: [ConformanceCase] {
        [
            ConformanceCase(
                "indexes.uniqueIndexRefusesEqualValues",
                "Indexes rule 3: a write that would give two items equal values in a unique index throws .uniqueConstraintViolation and the whole block rolls back; nil values never conflict; an item may keep its own value.",
                requires: .secondaryIndexes
            ) { c in
                let store = try c.openStore()
                try store.writeSync { a in
                    try a.insert(UniqueName(id: 1, name: "a"))
                    try a.insert(UniqueName(id: 2, name: "b"))
                    try a.insert(UniqueName(id: 3, name: nil))
                    try a.insert(UniqueName(id: 4, name: nil))
                }
                c.expectThrows(.uniqueConstraintViolation, "a second \"a\"") {
                    try store.writeSync { a in
                        try a.insert(UniqueName(id: 9, name: "z"))
                        try a.insert(UniqueName(id: 5, name: "a"))
                    }
                }
                c.expectEqual(try allOf(UniqueName.self, in: store).map(\.id), [1, 2, 3, 4], "the refused block rolled back whole")
                try store.writeSync { a in
                    try a.insert(UniqueName(id: 1, name: "a"))  // the same item keeps its value
                    try a.insert(UniqueName(id: 2, name: "c"))  // "b" is free again...
                    try a.insert(UniqueName(id: 5, name: "b"))  // ...for another item
                    try a.insert(UniqueName(id: 6, name: nil))
                }
                var req = DataStoreRequest(itemType: UniqueName.self)
                req.predicate = #Predicate<UniqueName> { $0.name == "b" }
                c.expectEqual(try store.read { try $0.items(forRequest: req) }.map(\.id), [5])
                req.predicate = #Predicate<UniqueName> { $0.name == nil }
                c.expectEqual(try store.read { try $0.items(forRequest: req) }.map(\.id), [3, 4, 6])
            },
            ConformanceCase(
                "indexes.mergeThatBreaksAUniqueIndexChangesNothing",
                "Indexes and Child Stores: a merge whose changes would break a unique index of the parent throws .uniqueConstraintViolation and changes nothing.",
                requires: [.secondaryIndexes, .childStores]
            ) { c in
                let store = try c.openStore()
                try store.writeSync { try $0.insert(UniqueName(id: 1, name: "a")) }
                let child = try store.makeChildDataStore()
                try child.writeSync { a in
                    try a.insert(UniqueName(id: 2, name: "other"))
                    try a.insert(UniqueName(id: 3, name: "a"))
                }
                c.expectThrows(.uniqueConstraintViolation, "the merge") { try store.merge(child) }
                c.expectEqual(try allOf(UniqueName.self, in: store).map(\.id), [1], "the parent after the refused merge")
                try child.writeSync { try $0.insert(UniqueName(id: 3, name: "c")) }
                try store.merge(child)
                c.expectEqual(try allOf(UniqueName.self, in: store).map(\.id), [1, 2, 3])
            },
        ]
    }
}
