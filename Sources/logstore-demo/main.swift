// logstore-demo: creates a store under the current directory, writes, queries, observes a
// request while writing (printing each live change), closes, reopens, and prints what it did and
// how long each step took.
//
//     swift run logstore-demo [directory]      (default: ./logstore-demo.store)
import Foundation
import LogStore

struct Restaurant: DataStoreItem {
    var id: UUID
    var name: String
    var cuisine: String
    var rating: Int
    var openedAt: Date
    var tags: [String]
}

func timed<T>(_ label: String, _ body: () throws -> T) rethrows -> T {
    let start = ContinuousClock.now
    let result = try body()
    let elapsed = ContinuousClock.now - start
    let ms = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    let padded = label.count < 52 ? label + String(repeating: " ", count: 52 - label.count) : label
    print("  " + padded + String(format: " %9.2f ms", ms))
    return result
}

/// Observes "5-star Thai restaurants by name, top 3" while writing, and prints each element: the
/// first at a snapshot, then one per commit that changes the window (and none for one that
/// cannot).
func observeLive(_ store: LogDataStore) async throws {
    var thai = DataStoreRequest(itemType: Restaurant.self)
    thai.predicate = #Predicate<Restaurant> { $0.rating == 5 && $0.cuisine == "Thai" }
    thai.sortDescriptors = [SortDescriptor(\.name)]
    thai.limit = 3
    print("  observing: 5-star Thai, by name, top 3")
    var live = store.observe(thai).makeAsyncIterator()
    func show(_ label: String) async throws {
        guard let e = try await live.next() else { return }
        let removed = e.difference.removals.count
        let inserted = e.difference.insertions.count
        print(
            "    #\(e.sequence) \(label): \(e.items.map(\.name)) (\(removed) removed, \(inserted) inserted, \(e.updatedIDs.count) updated)")
    }
    try await show("first element")
    let id = UUID()
    let new = Restaurant(id: id, name: "A Thai Kitchen", cuisine: "Thai", rating: 5, openedAt: Date(), tags: [])
    try await store.write { try $0.insert(new) }
    try await show("inserted \"A Thai Kitchen\"")
    try await store.write {
        try $0.insert(Restaurant(id: UUID(), name: "Trattoria", cuisine: "Italian", rating: 3, openedAt: Date(), tags: []))
    }
    print("    (a 3-star Italian restaurant was committed: no element for it)")
    let tagged = Restaurant(id: id, name: new.name, cuisine: "Thai", rating: 5, openedAt: new.openedAt, tags: ["late"])
    try await store.write { try $0.insert(tagged) }
    try await show("\"A Thai Kitchen\" got a tag")
    _ = try await store.write { try $0.deleteItem(ofType: Restaurant.self, id: id) }
    try await show("deleted \"A Thai Kitchen\"")
}

let arguments = CommandLine.arguments.dropFirst()
let path = arguments.first ?? FileManager.default.currentDirectoryPath + "/logstore-demo.store"
let url = URL(fileURLWithPath: path)
let cuisines = ["Italian", "Thai", "Ethiopian", "Mexican", "Japanese", "Georgian"]
let count = 10_000

do {
    print("LogStore demo: store at \(url.path)")
    let store = LogDataStore(directory: url)
    try timed("setup (create or open + recover)") { try store.setup() }
    let before = try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }
    print("  restaurants already stored: \(before)")

    try timed("insert \(count) restaurants (one durable transaction)") {
        try store.writeSync { accessor in
            for i in 0..<count {
                try accessor.insert(
                    Restaurant(
                        id: UUID(), name: "Restaurant \(before + i)", cuisine: cuisines[i % cuisines.count],
                        rating: i % 5 + 1, openedAt: Date(timeIntervalSince1970: Double(1_500_000_000 + i * 3600)),
                        tags: i % 3 == 0 ? ["vegan", "late"] : ["family"]))
            }
        }
    }
    try timed("100 durable single-item transactions") {
        for i in 0..<100 {
            try store.writeSync {
                try $0.insert(Restaurant(id: UUID(), name: "Pop-up \(i)", cuisine: "Fusion", rating: 3, openedAt: Date(), tags: []))
            }
        }
    }

    var best = DataStoreRequest(itemType: Restaurant.self)
    best.predicate = #Predicate<Restaurant> { $0.rating == 5 && $0.cuisine == "Thai" }
    best.sortDescriptors = [SortDescriptor(\.name)]
    best.limit = 3
    let top = try timed("query: 5-star Thai, sorted by name, limit 3") { try store.read { try $0.items(forRequest: best) } }
    for r in top { print("    \(r.name) (\(r.cuisine), \(r.rating)★)") }

    var vegan = DataStoreRequest(itemType: Restaurant.self)
    vegan.setFilter(whereAttribute: "cuisine", equalsValue: "Georgian")
    let georgian = try timed("count: attribute filter cuisine == Georgian") { try store.read { try $0.countItems(forRequest: vegan) } }
    print("    Georgian restaurants: \(georgian)")

    try await observeLive(store)

    let child = try store.makeChildDataStore()
    try timed("child store: add 3 items, merge into the parent") {
        try child.writeSync { a in
            for i in 0..<3 {
                try a.insert(
                    Restaurant(id: UUID(), name: "Basket item \(i)", cuisine: "Deli", rating: 4, openedAt: Date(), tags: ["basket"]))
            }
        }
        try store.merge(child)
        try child.tearDown()
    }

    let total = try store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }
    try timed("tearDown (flush and close)") { try store.tearDown() }

    let reopened = LogDataStore(directory: url)
    try timed("setup again (replay the log)") { try reopened.setup() }
    let after = try reopened.read { try $0.countItems(forRequest: DataStoreRequest(itemType: Restaurant.self)) }
    print("  restaurants after reopening: \(after) (expected \(total))")
    try reopened.tearDown()
    guard after == total else {
        print("error: the reopened store lost data")
        exit(1)
    }
    print("Done. Run it again to add to the same store, or delete \(url.lastPathComponent) to start over.")
} catch {
    FileHandle.standardError.write(Data("logstore-demo: \(error)\n".utf8))
    exit(1)
}
