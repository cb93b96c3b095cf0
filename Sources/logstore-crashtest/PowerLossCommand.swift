import ArgumentParser
import Foundation
import LogStoreEngine
import Synchronization
import _LogStoreTestSupport

/// `logstore-crashtest powerloss`: the in-process simulated power-loss harnesses, in chunks of
/// cycles (each chunk a fresh harness with its own seed, derived from the run's seed), optionally
/// on several threads.
struct PowerLoss: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "powerloss",
        abstract: "Run the simulated power-loss harnesses (DataStore and/or engine level) over the fault-injecting file system.",
        discussion: """
            Every cycle crashes the store at a random I/O operation, rebuilds the disk as a power \
            loss (or a kill -9) could have left it, recovers and checks it against the oracle. \
            Cycles run in chunks; a failure prints the chunk's seed: rerun that chunk alone with \
            --chunk-seed <seed> --cycles <chunk size> (and the same --level).
            """)

    enum Level: String, ExpressibleByArgument, CaseIterable {
        case datastore, engine, both
    }

    @Option(help: "Which harness: datastore, engine or both (cycles alternate between them).")
    var level: Level = .datastore

    @OptionGroup var length: RunLength

    enum Background: String, ExpressibleByArgument, CaseIterable {
        case on, off, alternate
    }

    @Option(help: "DataStore chunks with background compaction and checkpoints: on, off, or alternate (every other chunk).")
    var background: Background = .alternate

    enum EngineDurability: String, ExpressibleByArgument, CaseIterable {
        case synchronous, buffered, none

        var durability: Durability {
            switch self {
            case .synchronous: return .synchronous
            case .buffered: return .buffered
            case .none: return .none
            }
        }
    }

    @Option(
        help:
            "The engine harness's durability: synchronous (every commit synced), buffered or none (only flushed commits are promised; the unsynced ones at a crash may reach the disk out of order), as PowerLossTests' three runs."
    )
    var durability: EngineDurability = .synchronous

    @Option(help: "Run one chunk whose harness seed is this (what a failure report prints).")
    var chunkSeed: UInt64?

    @Option(help: "Cycles per chunk (one harness, one seed).")
    var chunk: Int = 1_000

    @Option(help: "Threads running chunks at once.")
    var jobs: Int = 1

    func run() throws {
        StopSignal.install()
        let seed = length.seed ?? UInt64.random(in: 0...UInt64.max)
        let total = length.cycleLimit(default: 1_000)
        let deadline = length.seconds.map { Date().addingTimeInterval($0) }
        let chunk = chunkSeed != nil ? total : max(1, min(self.chunk, total))
        print(
            "logstore-crashtest powerloss: level \(level.rawValue), engine durability \(durability.rawValue), seed \(seed), chunks of \(chunk) cycles, \(jobs) job(s)\(CrashTestSettings.encrypted ? ", encrypted stores" : "")"
        )
        let run = PowerLossRun(
            seed: seed, level: level, total: total, chunk: chunk, deadline: deadline, fixedChunkSeed: chunkSeed, background: background,
            durability: durability.durability)
        let threads = (0..<max(1, jobs)).map { _ in Thread { run.work() } }
        for t in threads {
            t.stackSize = 8 << 20
            t.start()
        }
        run.waitForWorkers(threads.count)
        let (summary, failed) = run.summary()
        print(summary)
        if failed { throw ExitCode(1) }
    }
}

/// Shared state of a power-loss run: which chunk comes next, and the totals. Sendable: every
/// field is immutable or behind `state`'s mutex.
final class PowerLossRun: Sendable {
    struct Totals {
        var nextChunk = 0
        var finishedWorkers = 0
        var failed = false
        var failures: [String] = []
        var dsCycles = 0, engineCycles = 0
        var compactions = 0
        var dsAcknowledged: [String: Int] = [:]
        var dsSteps: [String: Int] = [:]
        var dsCrashesDuring: [String: Int] = [:]
        var survived = 0, lost = 0
        var powerLossImages = 0, processCrashImages = 0
        var faults = FaultCounts()
    }

    let seed: UInt64
    let level: PowerLoss.Level
    let total: Int
    let chunk: Int
    let deadline: Date?
    let fixedChunkSeed: UInt64?
    let background: PowerLoss.Background
    let durability: Durability
    let started = Date()
    let state = Mutex(Totals())
    let done = DispatchSemaphore(value: 0)

    init(
        seed: UInt64, level: PowerLoss.Level, total: Int, chunk: Int, deadline: Date?, fixedChunkSeed: UInt64?,
        background: PowerLoss.Background, durability: Durability
    ) {
        self.durability = durability
        self.fixedChunkSeed = fixedChunkSeed
        self.background = background
        self.seed = seed
        self.level = level
        self.total = total
        self.chunk = chunk
        self.deadline = deadline
    }

    /// The seed of chunk `i`: the i-th output of the run's generator.
    func chunkSeed(_ i: Int) -> UInt64 {
        if let fixedChunkSeed { return fixedChunkSeed }
        var g = SplitMix64(seed: seed &+ 0x9E37_79B9_7F4A_7C15 &* UInt64(i))
        return g.next()
    }

    /// A worker thread: runs chunks until the run is done.
    func work() {
        defer {
            state.withLock { $0.finishedWorkers += 1 }
            done.signal()
        }
        while true {
            let next: Int? = state.withLock { s in
                if s.failed || StopSignal.requested { return nil }
                if let deadline, Date() >= deadline { return nil }
                let i = s.nextChunk
                if i * chunk >= total { return nil }
                s.nextChunk += 1
                return i
            }
            guard let i = next else { return }
            let cycles = min(chunk, total - i * chunk)
            let s = chunkSeed(i)
            let engine = level == .engine || (level == .both && i % 2 == 1)
            if engine {
                // As PowerLossTests runs it: sectors reordered in a quarter of the files.
                var c = PowerLossConfiguration(seed: s, cycles: cycles)
                c.options.durability = durability
                c.options.encryption = CrashTestSettings.encryption
                c.powerLossModel.sectorReorderingProbability = 0.25
                let r = EnginePowerLossHarness(c).run()
                state.withLock { t in
                    t.engineCycles += r.cyclesCompleted
                    t.survived += r.unacknowledgedSurvived
                    t.lost += r.unacknowledgedLost
                    t.powerLossImages += r.powerLossImages
                    t.processCrashImages += r.processCrashImages
                    t.faults += r.faults
                    if let f = r.failure {
                        t.failed = true
                        t.failures.append(
                            "engine chunk \(i), chunk seed \(s) (rerun: logstore-crashtest powerloss --level engine --durability \(durability) --chunk-seed \(s) --cycles \(cycles)):\n\(f)"
                        )
                    }
                }
            } else {
                // Every other DataStore chunk also compacts and checkpoints in the background.
                var c = DataStorePowerLossConfiguration(seed: s, cycles: cycles)
                c.options.encryption = CrashTestSettings.encryption
                switch background {
                case .on: c.backgroundMaintenance = true
                case .off: c.backgroundMaintenance = false
                case .alternate: c.backgroundMaintenance = (level == .both ? i / 2 : i) % 2 == 1
                }
                let r = DataStorePowerLossHarness(c).run(until: deadline) { StopSignal.requested }
                state.withLock { t in
                    t.dsCycles += r.cyclesCompleted
                    t.compactions += r.compactionsPerformed
                    for (k, v) in r.acknowledged { t.dsAcknowledged[k, default: 0] += v }
                    for (k, v) in r.steps { t.dsSteps[k, default: 0] += v }
                    for (k, v) in r.crashesDuring { t.dsCrashesDuring[k, default: 0] += v }
                    t.survived += r.unacknowledgedSurvived
                    t.lost += r.unacknowledgedLost
                    t.powerLossImages += r.powerLossImages
                    t.processCrashImages += r.processCrashImages
                    t.faults += r.faults
                    if let f = r.failure {
                        t.failed = true
                        t.failures.append(
                            "DataStore chunk \(i), chunk seed \(s) (rerun: logstore-crashtest powerloss --level datastore --background \(c.backgroundMaintenance ? "on" : "off") --chunk-seed \(s) --cycles \(cycles); background work makes the rerun approximate):\n\(f)"
                        )
                    }
                }
            }
        }
    }

    func waitForWorkers(_ n: Int) {
        for _ in 0..<n { done.wait() }
    }

    func summary() -> (String, Bool) {
        let seconds = Date().timeIntervalSince(started)
        return state.withLock { t in
            func list(_ d: [String: Int]) -> String { d.keys.sorted().map { "\($0) \(d[$0] ?? 0)" }.joined(separator: ", ") }
            let cycles = t.dsCycles + t.engineCycles
            var s =
                "simulated power-loss run, seed \(seed): \(cycles) cycles (DataStore \(t.dsCycles), engine \(t.engineCycles)) in \(String(format: "%.1f", seconds)) s (\(Int(Double(cycles) / max(seconds, 0.001) * 60)) cycles/minute)\n"
            s +=
                "  crash images: power loss \(t.powerLossImages), process crash \(t.processCrashImages); in-flight transactions survived \(t.survived), lost \(t.lost)\n"
            if t.dsCycles > 0 {
                s +=
                    "  DataStore acknowledged: \(list(t.dsAcknowledged))\n  DataStore steps: \(list(t.dsSteps)); compactions performed \(t.compactions)\n  DataStore crashes during: \(list(t.dsCrashesDuring))\n"
            }
            s += "  faults: \(t.faults)\n"
            s += "  violations: \(t.failures.count)"
            for f in t.failures { s += "\nVIOLATION: \(f)" }
            return (s, t.failed)
        }
    }
}
