// A worker process of the PostgreSQL multi-process test (Tests/LogStorePostgresTests,
// "PostgresConcurrencyTests"): one app server of several on one schema. Its writer threads
// increment shared counters and move amounts between accounts through writeSync, while a tap
// on its change feed records every commit the store publishes; the test checks that no update
// was lost, that the accounts' total is conserved, and that this process saw every commit once,
// in order.
//
//     logstore-postgres-worker <url> <schema> <writers> <operations per writer> <counters> <accounts> <final sequence> <barrier directory>
//
// Touches <barrier directory>/ready-<pid> once its tap is in place and starts writing when
// <barrier directory>/go exists. Prints `ok increments=<n> transfers=<n> runs=<n> seen=<first>...<last>`
// and exits 0, or prints what went wrong and exits 1.
import Foundation
import LogStore
import LogStorePostgres
import Synchronization

struct Counter: DataStoreItem, Codable, Equatable {
    static let itemType = "Counter"
    var id: Int
    var value: Int
}

struct Account: DataStoreItem, Codable, Equatable {
    static let itemType = "Account"
    var id: Int
    var balance: Int
}

func fail(_ message: String) -> Never {
    print(message)
    exit(1)
}

let arguments = CommandLine.arguments
guard arguments.count == 9, let writers = Int(arguments[3]), let operations = Int(arguments[4]), let counters = Int(arguments[5]),
    let accounts = Int(arguments[6]), let final = UInt64(arguments[7])
else {
    print(
        "usage: logstore-postgres-worker <url> <schema> <writers> <operations> <counters> <accounts> <final sequence> <barrier directory>")
    exit(2)
}
let barrier = arguments[8]

do {
    var configuration = try PostgresDataStore.Configuration(url: arguments[1])
    configuration.schema = arguments[2]
    configuration.maximumConnections = writers + 2
    configuration.pollInterval = .milliseconds(20)
    let store = PostgresDataStore(configuration: configuration)
    try store.setup()
    let seen = Mutex<[UInt64]>([])
    try store.tapCommitSequences { sequences in seen.withLock { $0 += sequences } }
    _ = FileManager.default.createFile(atPath: "\(barrier)/ready-\(getpid())", contents: nil)
    let start = ContinuousClock.now
    while !FileManager.default.fileExists(atPath: "\(barrier)/go") {
        if ContinuousClock.now - start > .seconds(120) { fail("no go after 120 s") }
        Thread.sleep(forTimeInterval: 0.01)
    }

    let runs = Atomic<Int>(0)
    let increments = Atomic<Int>(0)
    let transfers = Atomic<Int>(0)
    let failures = Mutex<[String]>([])
    let group = DispatchGroup()
    for w in 0..<writers {
        group.enter()
        Thread {
            defer { group.leave() }
            var rng = SystemRandomNumberGenerator()
            for i in 0..<operations {
                do {
                    if (w + i) % 2 == 0 {
                        let id = Int.random(in: 0..<counters, using: &rng)
                        try store.writeSync { a in
                            runs.add(1, ordering: .relaxed)
                            let current = try a.item(ofType: Counter.self, id: id)?.value ?? 0
                            try a.insert(Counter(id: id, value: current + 1))
                        }
                        increments.add(1, ordering: .relaxed)
                    } else {
                        let from = Int.random(in: 0..<accounts, using: &rng)
                        let to = (from + Int.random(in: 1..<accounts, using: &rng)) % accounts
                        let amount = Int.random(in: 1...10, using: &rng)
                        try store.writeSync { a in
                            runs.add(1, ordering: .relaxed)
                            guard var f = try a.item(ofType: Account.self, id: from), var t = try a.item(ofType: Account.self, id: to)
                            else {
                                throw LogStoreError(.corruption, "an account is missing")
                            }
                            let moved = min(amount, f.balance)
                            f.balance -= moved
                            t.balance += moved
                            try a.insert(f)
                            try a.insert(t)
                        }
                        transfers.add(1, ordering: .relaxed)
                    }
                } catch {
                    failures.withLock { $0.append("writer \(w), operation \(i): \(error)") }
                    return
                }
            }
        }.start()
    }
    group.wait()
    let failed = failures.withLock { $0 }
    if !failed.isEmpty { fail(failed.joined(separator: "\n")) }

    // Every commit of every process reaches this one's feed (its own at once, the others' by
    // polling): wait for the last one.
    let waitStart = ContinuousClock.now
    while seen.withLock({ $0.last ?? 0 }) < final {
        if ContinuousClock.now - waitStart > .seconds(60) {
            fail("saw commits up to #\(seen.withLock { $0.last ?? 0 }) of \(final) after 60 s")
        }
        Thread.sleep(forTimeInterval: 0.01)
    }
    try store.tearDown()
    let sequences = seen.withLock { $0 }
    guard let first = sequences.first, let last = sequences.last else { fail("saw no commit") }
    for (a, b) in zip(sequences, sequences.dropFirst()) where b != a + 1 {
        fail("commit #\(b) followed #\(a): a commit missed, repeated or out of order")
    }
    print(
        "ok increments=\(increments.load(ordering: .relaxed)) transfers=\(transfers.load(ordering: .relaxed)) runs=\(runs.load(ordering: .relaxed)) seen=\(first)...\(last)"
    )
    exit(0)
} catch {
    fail("error: \(error)")
}
