import Foundation
import Synchronization

#if canImport(Glibc)
    import CMallocInfo
    import Glibc
#endif

/// Monotonic time in nanoseconds.
@inline(__always) func nowNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

#if canImport(Glibc)
    let rusageSelf = __rusage_who_t(RUSAGE_SELF.rawValue)
#else
    let rusageSelf = RUSAGE_SELF
#endif

/// User + system CPU seconds of the whole process (every thread, background syncs included).
func processCPUSeconds() -> Double {
    var u = rusage()
    getrusage(rusageSelf, &u)
    func s(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return s(u.ru_utime) + s(u.ru_stime)
}

/// Resident set size from /proc/self/statm (bytes); 0 where unavailable.
func residentBytes() -> UInt64 {
    guard let s = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let f = s.split(separator: " ")
    guard f.count > 1, let pages = UInt64(f[1]) else { return 0 }
    return pages * UInt64(sysconf(Int32(_SC_PAGESIZE)))
}

/// Bytes of heap in use (glibc `mallinfo2().uordblks`): unlike RSS it falls when memory is freed,
/// so a before/after difference is what a structure really holds. 0 where unavailable.
func heapBytesInUse() -> UInt64 {
    #if canImport(Glibc)
        malloc_trim(0)
        return UInt64(mallinfo2().uordblks)
    #else
        return 0
    #endif
}

/// Bytes allocated on disk under `path` (like `du`: blocks, not apparent size).
func diskBytes(_ path: String) -> UInt64 {
    var total: UInt64 = 0
    var st = stat()
    if lstat(path, &st) == 0, (st.st_mode & S_IFMT) != S_IFDIR { return UInt64(st.st_blocks) * 512 }
    guard let walker = FileManager.default.enumerator(atPath: path) else { return 0 }
    for case let rel as String in walker {
        if lstat(path + "/" + rel, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG { total += UInt64(st.st_blocks) * 512 }
    }
    return total
}

/// Apparent size (sum of file lengths) under `path`.
func apparentBytes(_ path: String) -> UInt64 {
    var total: UInt64 = 0
    var st = stat()
    guard let walker = FileManager.default.enumerator(atPath: path) else { return 0 }
    for case let rel as String in walker {
        if lstat(path + "/" + rel, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG { total += UInt64(st.st_size) }
    }
    return total
}

/// The latencies of a run and its duration.
struct Run {
    var latencies: [UInt64] = []
    /// Seconds the run took: the sum of the timed operations (single thread) or the wall time
    /// (concurrent runs).
    var seconds: Double = 0
    /// CPU seconds the process used during the run.
    var cpuSeconds: Double = 0

    var ops: Int { latencies.count }

    /// A run of one timed operation of `seconds`, which used `cpu` seconds of process CPU (0:
    /// not measured).
    static func once(seconds: Double, cpu: Double = 0) -> Run {
        Run(latencies: [UInt64(seconds * 1e9)], seconds: seconds, cpuSeconds: cpu)
    }

    /// Adds another slice of the same measurement.
    mutating func merge(_ other: Run) {
        latencies += other.latencies
        seconds += other.seconds
        cpuSeconds += other.cpuSeconds
    }

    func percentileMicros(_ p: Double) -> Double? {
        guard !latencies.isEmpty else { return nil }
        let sorted = latencies.sorted()
        let i = min(sorted.count - 1, max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1))
        return Double(sorted[i]) / 1000
    }
}

/// Runs `op(i)` for i = 0, 1, ... until `maxOps` operations or `maxSeconds` of timed work
/// (at least `minOps`), timing each call. Work outside `op` (e.g. making the next item) is not
/// counted.
func timedLoop(maxOps: Int, maxSeconds: Double, minOps: Int = 1, _ op: (Int) throws -> Void) rethrows -> Run {
    var run = Run()
    run.latencies.reserveCapacity(min(maxOps, 1 << 20))
    let budget = UInt64(maxSeconds * 1e9)
    var total: UInt64 = 0
    let cpu0 = processCPUSeconds()
    var i = 0
    while i < maxOps && (total < budget || i < minOps) {
        let t0 = nowNanos()
        try op(i)
        let dt = nowNanos() - t0
        run.latencies.append(dt)
        total += dt
        i += 1
    }
    run.seconds = Double(total) / 1e9
    run.cpuSeconds = processCPUSeconds() - cpu0
    return run
}

/// Like `timedLoop`, with `between()` run untimed after every operation (e.g. closing what the
/// operation opened). CPU is counted for the operations only.
func timedLoop(maxOps: Int, maxSeconds: Double, _ op: (Int) throws -> Void, between: () throws -> Void) rethrows -> Run {
    var run = Run()
    let budget = UInt64(maxSeconds * 1e9)
    var total: UInt64 = 0
    var i = 0
    while i < maxOps && (total < budget || i < 1) {
        let c0 = processCPUSeconds()
        let t0 = nowNanos()
        try op(i)
        let dt = nowNanos() - t0
        run.cpuSeconds += processCPUSeconds() - c0
        run.latencies.append(dt)
        total += dt
        i += 1
        try between()
    }
    run.seconds = Double(total) / 1e9
    return run
}

/// Runs `op(thread, n)` on `threads` threads at once until `maxOps` operations in all or
/// `maxSeconds` of wall time; `n` counts operations across all threads (0, 1, 2, ...), so each
/// is unique. Throughput is ops / wall time. The first error stops every thread and is rethrown.
func concurrentLoop(
    threads: Int, maxOps: Int, maxSeconds: Double,
    _ op: @escaping @Sendable (_ thread: Int, _ n: Int) throws -> Void
) throws -> Run {
    final class Shared: Sendable {
        let issued = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let deadline = Atomic<UInt64>(0)
        let results: Mutex<[[UInt64]]>
        let failure = Mutex<(any Error)?>(nil)
        let ready = DispatchGroup()
        let done = DispatchGroup()
        let go = DispatchSemaphore(value: 0)
        init(threads: Int) { results = Mutex(Array(repeating: [], count: threads)) }
    }
    let shared = Shared(threads: threads)
    for t in 0..<threads {
        shared.ready.enter()
        shared.done.enter()
        let thread = Thread {
            var local: [UInt64] = []
            local.reserveCapacity(maxOps / threads + 16)
            shared.ready.leave()
            shared.go.wait()
            let deadline = shared.deadline.load(ordering: .acquiring)
            while !shared.stop.load(ordering: .relaxed) {
                let n = shared.issued.wrappingAdd(1, ordering: .relaxed).oldValue
                if n >= maxOps { break }
                let t0 = nowNanos()
                if t0 >= deadline { break }
                do {
                    try op(t, n)
                } catch {
                    shared.failure.withLock { if $0 == nil { $0 = error } }
                    shared.stop.store(true, ordering: .relaxed)
                    break
                }
                local.append(nowNanos() - t0)
            }
            let mineLatencies = local
            shared.results.withLock { $0[t] = mineLatencies }
            shared.done.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    shared.ready.wait()
    let cpu0 = processCPUSeconds()
    let start = nowNanos()
    shared.deadline.store(start + UInt64(maxSeconds * 1e9), ordering: .releasing)
    for _ in 0..<threads { shared.go.signal() }
    shared.done.wait()
    let wall = nowNanos() - start
    if let e = shared.failure.withLock({ $0 }) { throw e }
    var run = Run()
    run.latencies = shared.results.withLock { $0.flatMap { $0 } }
    run.seconds = Double(wall) / 1e9
    run.cpuSeconds = processCPUSeconds() - cpu0
    return run
}

/// Times one call.
func timeOnce<T>(_ body: () throws -> T) rethrows -> (T, Double) {
    let t0 = nowNanos()
    let r = try body()
    return (r, Double(nowNanos() - t0) / 1e9)
}
