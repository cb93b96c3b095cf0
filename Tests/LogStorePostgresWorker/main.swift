// A worker process of the PostgreSQL concurrency test (Tests/LogStorePostgresTests,
// "PostgresConcurrencyTests"): several processes, each with several writer threads, increment
// shared counters through writeSync; the test checks that no increment was lost.
//
//     logstore-postgres-worker <url> <schema> <writers> <increments per writer> <counters>
//
// Prints `ok <attempts>` (write blocks run, retries included) and exits 0, or prints the error and
// exits 1.
import Foundation
import LogStore
import LogStorePostgres
import Synchronization

struct Counter: DataStoreItem, Codable, Equatable {
    static let itemType = "Counter"
    var id: Int
    var value: Int
}

let arguments = CommandLine.arguments
guard arguments.count == 6, let writers = Int(arguments[3]), let increments = Int(arguments[4]), let counters = Int(arguments[5]) else {
    print("usage: logstore-postgres-worker <url> <schema> <writers> <increments> <counters>")
    exit(2)
}
do {
    var configuration = try PostgresDataStore.Configuration(url: arguments[1])
    configuration.schema = arguments[2]
    configuration.maximumConnections = writers + 2
    let store = PostgresDataStore(configuration: configuration)
    try store.setup()
    let attempts = Atomic<Int>(0)
    let failures = Mutex<[String]>([])
    let group = DispatchGroup()
    for w in 0..<writers {
        group.enter()
        Thread {
            defer { group.leave() }
            for i in 0..<increments {
                do {
                    try store.writeSync { a in
                        attempts.add(1, ordering: .relaxed)
                        let id = (w + i) % counters
                        let current = try a.item(ofType: Counter.self, id: id)?.value ?? 0
                        try a.insert(Counter(id: id, value: current + 1))
                    }
                } catch {
                    failures.withLock { $0.append("writer \(w), increment \(i): \(error)") }
                    return
                }
            }
        }.start()
    }
    group.wait()
    try store.tearDown()
    let failed = failures.withLock { $0 }
    if !failed.isEmpty {
        print(failed.joined(separator: "\n"))
        exit(1)
    }
    print("ok \(attempts.load(ordering: .relaxed))")
    exit(0)
} catch {
    print("error: \(error)")
    exit(1)
}
