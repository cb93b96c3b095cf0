// logstore-demo: creates a store under the current directory, writes, queries, closes, reopens,
// and prints what it did and how long each step took.
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
                try accessor.insert(Restaurant(
                    id: UUID(), name: "Restaurant \(before + i)", cuisine: cuisines[i % cuisines.count],
                    rating: i % 5 + 1, openedAt: Date(timeIntervalSince1970: Double(1_500_000_000 + i * 3600)),
                    tags: i % 3 == 0 ? ["vegan", "late"] : ["family"]))
            }
        }
    }
    try timed("100 durable single-item transactions") {
        for i in 0..<100 {
            try store.writeSync { try $0.insert(Restaurant(id: UUID(), name: "Pop-up \(i)", cuisine: "Fusion", rating: 3, openedAt: Date(), tags: [])) }
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

    let child = try store.makeChildDataStore()
    try timed("child store: add 3 items, merge into the parent") {
        try child.writeSync { a in
            for i in 0..<3 { try a.insert(Restaurant(id: UUID(), name: "Basket item \(i)", cuisine: "Deli", rating: 4, openedAt: Date(), tags: ["basket"])) }
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
