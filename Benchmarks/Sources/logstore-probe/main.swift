// A fixed DataStore workload for instruction counts: `logstore-probe OP N DIR` opens a fresh
// store in DIR, loads 100,000 items in one transaction, then runs N operations of OP. Run it
// under `valgrind --tool=callgrind` with two values of N and divide the difference of the totals
// by the difference of the N: the instructions per operation, without the set-up, repeatable on
// a busy machine (Docs/Performance.md, "Instruction counts"). It uses only API that every
// version of LogStore since the store shell has, so two builds can be compared side by side.
//
//   OP: point-read (deterministic ids), buffered-write (one insert per transaction),
//       child-merge (children of 100 inserts merged into the store; N counts items)

import Foundation
import LogStore

struct ProbeItem: DataStoreItem {
    var id: Int
    var name: String
    var category: String
    var price: Int
    var rating: Double
    var tags: [String]
    var created: Date
    var note: String

    init(_ i: Int) {
        id = i
        name = "item \(i) name \(i % 977)"
        category = ["food", "drink", "dessert", "side"][i % 4]
        price = i % 5000
        rating = Double(i % 50) / 10
        tags = ["t\(i % 13)", "u\(i % 7)"]
        created = Date(timeIntervalSinceReferenceDate: Double(i))
        note = String(repeating: "lorem ipsum dolor sit amet ", count: 4)
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 4, let n = Int(arguments[2]), n >= 0,
    ["point-read", "buffered-write", "child-merge"].contains(arguments[1])
else {
    FileHandle.standardError.write(Data("usage: logstore-probe point-read|buffered-write|child-merge N DIR\n".utf8))
    exit(2)
}
let operation = arguments[1]
let directory = URL(fileURLWithPath: arguments[3])

do {
    try? FileManager.default.removeItem(at: directory)
    var options = LogStoreOptions()
    options.durability = .buffered
    let store = LogDataStore(directory: directory, options: options)
    try store.setup()
    let preload = 100_000
    try store.writeSync { a in for i in 0..<preload { try a.insert(ProbeItem(i)) } }
    var checksum = 0
    switch operation {
    case "point-read":
        for i in 0..<n {
            let id = (i &* 7919) % preload
            checksum &+= try store.read { try $0.item(ofType: ProbeItem.self, id: id) }?.price ?? 0
        }
    case "buffered-write":
        for i in 0..<n { try store.writeSync { try $0.insert(ProbeItem(preload + i)) } }
    default:
        for round in 0..<(n / 100) {
            let child = try store.makeChildDataStore()
            try child.writeSync { a in for j in 0..<100 { try a.insert(ProbeItem(preload + round * 100 + j)) } }
            try store.merge(child)
        }
    }
    try store.tearDown()
    print(checksum)
} catch {
    FileHandle.standardError.write(Data("logstore-probe: \(error)\n".utf8))
    exit(1)
}
