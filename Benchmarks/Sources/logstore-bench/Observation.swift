import Dispatch
import Foundation
import LogStore
import Synchronization

/// Observation workloads: commit-to-delivery latency with 1, 10 and 100 observers;
/// write throughput with 100 observers of other types against none; the cost of one change in an
/// observed request over a large store. LogStore only: no peer has this feature in this runner.

/// Another item type, observed while `BenchItem`s are written.
struct OtherItem: DataStoreItem, Equatable {
    var id: Int
    var note: String
}

/// Consumes one observation on a task and hands each element's receipt time to the benchmark
/// thread, which blocks on `next()`.
final class ObservationProbe: Sendable {
    let received = Mutex<[(sequence: UInt64, nanos: UInt64)]>([])
    let arrived = DispatchSemaphore(value: 0)
    let ended = DispatchSemaphore(value: 0)
    let task = Mutex<Task<Void, Never>?>(nil)

    init<E: Sendable>(_ observation: DataStoreObservation<E>, sequence: @escaping @Sendable (E) -> UInt64) {
        let t = Task { [self] in
            do {
                for try await e in observation {
                    let now = nowNanos()
                    self.received.withLock { $0.append((sequence(e), now)) }
                    self.arrived.signal()
                }
            } catch {
                FileHandle.standardError.write(Data("[bench] observation ended: \(error)\n".utf8))
            }
            self.ended.signal()
        }
        task.withLock { $0 = t }
    }

    /// Waits for the next element (at most `seconds`); returns its sequence and receipt time.
    func next(seconds: Double = 120) throws -> (sequence: UInt64, nanos: UInt64) {
        guard arrived.wait(timeout: .now() + seconds) == .success else { throw BenchError("no observation element within \(seconds) s") }
        return received.withLock { $0.removeFirst() }
    }

    func cancel() { task.withLock { $0?.cancel() } }

    /// Cancels and waits until the iteration has ended (and the observation, with whatever it
    /// held, was released), so that freeing a large observation is not timed in the next row.
    func cancelAndWait() {
        cancel()
        ended.wait()
    }
}

extension Bench {
    /// Latency from the start of a commit to the moment each observer has the element reflecting
    /// it, with 1, 10 and 100 observers of the committed type.
    func observeLatency() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "observe-latency", title: "commit-to-delivery latency with 1, 10 and 100 observers",
            op: "one element received by one observer, timed from the start of the commit that caused it", unit: "element")
        let commits = cfg.quick ? 200 : 1_000
        let s = try LogStoreDataStore(path: freshDir("observe"), mode: .buffered)
        defer { remove(s) }
        try s.insertBatch((0..<1_000).map { ItemFactory.make(id: $0) }[...])
        var commitRun = Run()
        for observers in [1, 10, 100] {
            let probes = (0..<observers).map { _ in
                ObservationProbe(s.store.observe(DataStoreRequest(itemType: BenchItem.self))) { $0.sequence }
            }
            defer { for p in probes { p.cancel() } }
            for p in probes { _ = try p.next() }  // the first elements
            var run = Run()
            let cpu0 = processCPUSeconds()
            let wall0 = nowNanos()
            for i in 0..<commits {
                let item = ItemFactory.make(id: 1_000 + observers * commits + i)
                let t0 = nowNanos()
                try s.insert(item)
                if observers == 1 { commitRun.latencies.append(nowNanos() - t0) }
                for p in probes {
                    let (_, at) = try p.next()
                    run.latencies.append(at &- t0)
                }
            }
            run.seconds = Double(nowNanos() - wall0) / 1e9
            run.cpuSeconds = processCPUSeconds() - cpu0
            let perCommit = run.cpuSeconds / Double(commits) * 1e6
            w.rows.append(
                Row(
                    key: "observers-\(observers)", system: "LogStore, \(observers) observer\(observers == 1 ? "" : "s")",
                    config: "buffered, 1,000 items, all of them observed", role: observers == 1 ? .subject : .variant, run: run,
                    extra: ["cpu_us_per_commit": perCommit, "cpu_us_per_element": perCommit / Double(observers)]))
        }
        commitRun.seconds = Double(commitRun.latencies.reduce(0, +)) / 1e9
        w.rows.append(
            Row(
                key: "commit-alone", system: "the commit itself (writeSync)", config: "from the 1-observer run", role: .reference,
                run: commitRun, note: "part of every latency above"))
        w.notes.append(
            "\(commits) single-item commits per row, each waited for by every observer before the next (so nothing coalesces). Each observer iterates store.observe(all BenchItems) on its own task; the latency runs from calling writeSync to the observer's next() returning. cpu_us_per_commit is the whole process's CPU (commit, every observer's queue job, delivery) per commit."
        )
        return w
    }

    /// Buffered single-item write throughput with no observers, with 100 observers of another
    /// type (the target: at least 0.95x), and with 100 observers of the written type whose
    /// predicate never matches (what relevance checks cost).
    func observeWrite() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "observe-write", title: "buffered write throughput with 100 observers of other types vs none",
            op: "one write transaction inserting one item, written to the OS but not synced", unit: "txn")
        let items = (0..<cfg.bufferedOps).map { ItemFactory.make(id: $0) }
        let none = try LogStoreDataStore(path: freshDir("observe-none"), mode: .buffered)
        let other = try LogStoreDataStore(path: freshDir("observe-other"), mode: .buffered)
        let same = try LogStoreDataStore(path: freshDir("observe-same"), mode: .buffered)
        var probes: [ObservationProbe] = []
        defer {
            for p in probes { p.cancel() }
            for s in [none, other, same] { remove(s) }
        }
        try other.store.writeSync { a in for i in 0..<100 { try a.insert(OtherItem(id: i, note: "other")) } }
        for i in 0..<100 {
            var r = DataStoreRequest(itemType: OtherItem.self)
            r.predicate = #Predicate<OtherItem> { $0.id == i }
            probes.append(ObservationProbe(other.store.observe(r)) { $0.sequence })
        }
        for i in 0..<100 {
            var r = DataStoreRequest(itemType: BenchItem.self)
            let never = -1 - i
            r.predicate = #Predicate<BenchItem> { $0.rating == never }
            probes.append(ObservationProbe(same.store.observe(r)) { $0.sequence })
        }
        for p in probes { _ = try p.next() }
        let cs = [
            Contender(key: "no-observers", system: "LogStore, no observers", config: "buffered", role: .subject) { i in
                try none.insert(items[i])
            },
            Contender(key: "observers-other-type", system: "LogStore, 100 observers", config: "of another item type", role: .variant) { i in
                try other.insert(items[i])
            },
            Contender(
                key: "observers-same-type", system: "LogStore, 100 observers", config: "of the written type, never matching", role: .variant
            ) {
                i in try same.insert(items[i])
            },
        ]
        w.rows = try interleaved(cs, maxOps: cfg.bufferedOps, maxSeconds: cfg.bufferedSeconds)
        w.notes.append(
            "Three fresh buffered stores, interleaved in \(cfg.rounds) rounds. Every store has a change feed (the engine announces each commit's keys whether or not anyone observes); observers of other types are never handed the commit. Observers of the written type are handed every commit and read the written item on their own queues (off the writer's thread), which competes for the 2 CPUs."
        )
        return w
    }

    /// One change in an observed request over a store of n items: time from the commit to the
    /// element, and CPU, for the request shapes observation handles differently, at n and at 10,000.
    func observeLarge() throws -> WorkloadResult {
        var w = WorkloadResult(
            name: "observe-large", title: "one changed item in an observed request over \(cfg.n) items",
            op: "one single-item update of an observed result, from the commit to the element", unit: "update")
        let small = 10_000
        let smallLog = try LogStoreDataStore(path: freshDir("observe-small"), mode: .buffered)
        let bigLog = try LogStoreDataStore(path: freshDir("observe-large"), mode: .buffered)
        defer {
            remove(smallLog)
            remove(bigLog)
        }
        log("  loading \(small) and \(cfg.n) items into buffered stores (untimed)")
        _ = try load(smallLog, n: small)
        _ = try load(bigLog, n: cfg.n)
        struct Shape {
            var key: String
            var title: String
            var request: DataStoreRequest<BenchItem>
        }
        let all = DataStoreRequest(itemType: BenchItem.self)
        var byDate = all
        byDate.sortDescriptors = [SortDescriptor(\.date, order: .reverse)]
        var page = all
        page.limit = 20
        var best = all
        best.predicate = #Predicate<BenchItem> { $0.rating >= 4 }
        best.sortDescriptors = [SortDescriptor(\.date, order: .reverse)]
        best.limit = 20
        let shapes = [
            Shape(key: "all-id-order", title: "every item, id order (maintained)", request: all),
            Shape(key: "all-by-date", title: "every item, by date (maintained)", request: byDate),
            Shape(key: "first-20", title: "first 20 by id (window, re-run)", request: page),
            Shape(key: "best-20-by-date", title: "rating >= 4 by date, 20 (window, re-run)", request: best),
        ]
        for (n, s) in [(small, smallLog), (cfg.n, bigLog)] {
            for shape in shapes {
                let t0 = nowNanos()
                let cpuStart = processCPUSeconds()
                let firstItems = Mutex<[BenchItem]>([])
                let probe = ObservationProbe(s.store.observe(shape.request)) { e in
                    if e.isInitial { firstItems.withLock { $0 = Array(e.items.prefix(1)) } }
                    return e.sequence
                }
                defer { probe.cancelAndWait() }
                _ = try probe.next(seconds: 600)
                let initialSeconds = Double(nowNanos() - t0) / 1e9
                let initialCPU = processCPUSeconds() - cpuStart
                guard let target = firstItems.withLock({ $0.first }) else { throw BenchError("\(shape.key): empty result") }
                var run = Run()
                let budget = n == small ? 5.0 : (cfg.quick ? 10.0 : 20.0)
                let cpu0 = processCPUSeconds()
                var version: UInt64 = 1
                var spent: UInt64 = 0
                while run.latencies.count < 1_000 && (Double(spent) / 1e9 < budget || run.latencies.count < 3) {
                    // Change the first result's text: it stays where it is (an in-place update).
                    var item = target
                    item.text = "changed \(version)"
                    version += 1
                    let c0 = nowNanos()
                    let changed = item
                    try s.store.writeSync { try $0.insert(changed) }
                    let (_, at) = try probe.next(seconds: 600)
                    run.latencies.append(at &- c0)
                    spent += at &- c0
                }
                run.seconds = Double(spent) / 1e9
                run.cpuSeconds = processCPUSeconds() - cpu0
                w.rows.append(
                    Row(
                        key: "\(shape.key)-\(n)", system: shape.title, config: "n = \(n)",
                        role: n == cfg.n && shape.key == "all-id-order" ? .subject : .variant, run: run,
                        extra: ["initial_ms": initialSeconds * 1e3, "initial_cpu_ms": initialCPU * 1e3]))
                try s.store.writeSync { try $0.insert(target) }
            }
        }
        w.notes.append(
            "Each row observes one request on a loaded buffered store, waits for the first element (initial_ms: fetch at a snapshot and build), then updates the first result's text in single-item commits and times each from calling writeSync to the element; cpu_us_per_op is the process's CPU per update (the commit and the observation's work). Maintained requests (no limit, offset or attribute sort) move the changed item in a persistent tree: their cost should not grow with n. Windows re-run the request: the id-order page is O(log n + 20), the sorted predicate window scans every item (O(log n + 20) with a declared index)."
        )
        return w
    }
}
