import Foundation
public import LogStore
public import LogStoreEngine

/// Settings of a ``DataStorePowerLossHarness`` run.
public struct DataStorePowerLossConfiguration: Sendable {
    /// The seed every random decision of the run derives from.
    public var seed: UInt64
    /// How many crash cycles to run (each: open + check, a workload, a crash, a crash image).
    public var cycles: Int
    /// A fresh, empty store is started every this many cycles (bounds the log's size).
    public var cyclesPerStore = 40
    /// The share of cycles that aim their crash at the first merge, reopen, async write, child
    /// write or compaction of the cycle (a crash at one of its first I/O operations; if there is no such step,
    /// at a random later operation or at the end of the cycle).
    public var targetedCrashFraction = 0.35
    /// The most workload steps between two crashes.
    public var maxStepsPerCycle = 10
    /// The share of crashes that are process crashes (`kill -9`) rather than power losses.
    public var processCrashFraction = 0.2
    /// The probability that an open is itself interrupted by a crash (during recovery).
    public var crashDuringOpenFraction = 0.15
    /// How power-loss images are built. Default: dirty sectors reordered in a quarter of the
    /// files with unsynced data (commits are synchronous, so at most one is unsynced at a time).
    public var powerLossModel: PowerLossModel = {
        var m = PowerLossModel()
        m.sectorReorderingProbability = 0.25
        return m
    }()
    /// The store directory on the fault-injecting file system.
    public var directory = "/data/store"
    /// Store options. Default: synchronous durability, 64 KiB segments (frequent roll-overs),
    /// 512-byte frames (multi-frame transactions), 2 KiB child spill threshold (children spill
    /// to a temporary file in the store directory).
    public var options: LogStoreOptions
    /// The workload mix.
    public var workload = DataStoreCrashWorkloadGenerator()
    /// Whether the store also compacts and checkpoints in the background (see
    /// ``withBackgroundMaintenance(_:)``). Background work makes a seed's run depend on thread
    /// timing, so the default is off: compactions then happen only in compact steps, and
    /// checkpoints in them and in `tearDown()`.
    public var backgroundMaintenance = false

    /// A configuration with the defaults above.
    public init(seed: UInt64, cycles: Int) {
        self.seed = seed
        self.cycles = cycles
        var o = LogStoreOptions()
        o.durability = .synchronous
        o.segmentSize = 64 << 10
        o.maxFramePayload = 512
        o.cacheSize = 256 << 10
        o.childSpillThreshold = 2 << 10
        o.autoCompaction = false
        o.checkpointInterval = 0
        o.compactionThreshold = 0.3
        o.compactionMinimumDeadBytes = 8 << 10
        options = o
    }

    /// `options` with background compaction (once 30% and 8 KiB of the sealed segments are
    /// dead) and background checkpoints (every 48 KiB of log) on.
    public static func withBackgroundMaintenance(_ options: LogStoreOptions) -> LogStoreOptions {
        var o = options
        o.autoCompaction = true
        o.compactionThreshold = 0.3
        o.compactionMinimumDeadBytes = 8 << 10
        o.checkpointInterval = 48 << 10
        return o
    }
}

/// What a DataStore power-loss run did, and the first broken promise it found (if any).
public struct DataStorePowerLossReport: Sendable, CustomStringConvertible {
    /// The run's seed (rerun with it to reproduce).
    public var seed: UInt64
    /// Crash cycles completed.
    public var cyclesCompleted = 0
    /// Parent transactions whose commit returned, by kind (`write`, `async`, `merge`).
    public var acknowledged: [String: Int] = [:]
    /// Steps run to completion, by step name.
    public var steps: [String: Int] = [:]
    /// The step a crash interrupted, by step name ("open" for a crash during recovery, "idle"
    /// for a crash between steps).
    public var crashesDuring: [String: Int] = [:]
    /// In-flight (unacknowledged) transactions found complete after the crash.
    public var unacknowledgedSurvived = 0
    /// In-flight transactions absent after the crash.
    public var unacknowledgedLost = 0
    /// Power-loss crash images built.
    public var powerLossImages = 0
    /// Process-crash images built.
    public var processCrashImages = 0
    /// Compaction steps that rewrote segments.
    public var compactionsPerformed = 0
    /// The faults applied by every power-loss image.
    public var faults = FaultCounts()
    /// The first failure, or nil if every check passed.
    public var failure: PowerLossFailure?

    /// Creates an empty report for `seed`.
    public init(seed: UInt64) { self.seed = seed }

    /// Every acknowledged transaction.
    public var transactionsAcknowledged: Int { acknowledged.values.reduce(0, +) }

    static func list(_ d: [String: Int]) -> String {
        d.keys.sorted().map { "\($0) \(d[$0] ?? 0)" }.joined(separator: ", ")
    }

    /// A multi-line summary.
    public var description: String {
        var s =
            "DataStore power-loss run seed \(seed): \(cyclesCompleted) cycles, \(transactionsAcknowledged) acknowledged transactions (\(Self.list(acknowledged))), "
        s +=
            "in-flight survived \(unacknowledgedSurvived) / lost \(unacknowledgedLost); images: \(powerLossImages) power loss, \(processCrashImages) process crash\n"
        s +=
            "steps: \(Self.list(steps)); compactions performed \(compactionsPerformed)\ncrashes during: \(Self.list(crashesDuring))\nfaults: \(faults)"
        if let failure { s += "\nFAILED: \(failure)" }
        return s
    }
}

/// The DataStore-level simulated power-loss harness (Docs/Testing.md, "Crash recovery").
///
/// Like ``EnginePowerLossHarness``, but through `LogDataStore` with the DataStore workload: each
/// cycle sets the store up on the current crash image (sometimes crashing inside `setup()`, i.e.
/// during recovery), checks it with the ``CrashOracle`` (a merge is one transaction), runs random
/// steps (``DataStoreCrashWorkloadGenerator``) with a crash point armed at a random mutating I/O
/// operation, and replaces the file system with a power-loss or process-crash image.
/// Deterministic given the configuration's seed.
///
/// Use from one thread; ``run()`` blocks until the run ends or the first failure.
public final class DataStorePowerLossHarness {
    /// The run's settings.
    public let configuration: DataStorePowerLossConfiguration
    var rng: SplitMix64
    var report: DataStorePowerLossReport
    var events: [String] = []
    var cycle = 0
    var fs = FaultInjectingFileSystem()
    var oracle = CrashOracle()
    var workload: DataStoreCrashWorkloadGenerator
    let options: LogStoreOptions

    /// A harness for `configuration`.
    public init(_ configuration: DataStorePowerLossConfiguration) {
        self.configuration = configuration
        rng = SplitMix64(seed: configuration.seed)
        report = DataStorePowerLossReport(seed: configuration.seed)
        workload = configuration.workload
        options =
            configuration.backgroundMaintenance
            ? DataStorePowerLossConfiguration.withBackgroundMaintenance(configuration.options) : configuration.options
    }

    static let targets = ["merge", "merge", "reopen", "writeAsync", "childWrite", "compact"]

    func note(_ event: String) {
        events.append("[\(cycle)] " + event)
        if events.count > 100 { events.removeFirst(events.count - 80) }
    }

    func fail(_ message: String) -> DataStorePowerLossReport {
        var r = report
        r.failure = PowerLossFailure(seed: configuration.seed, cycle: cycle, message: message, recentEvents: events)
        return r
    }

    /// Runs every cycle (or until `deadline`, or until `stop` returns true; it is asked before
    /// each cycle), then opens and checks the last crash image. Returns the report; its
    /// ``DataStorePowerLossReport/failure`` is set at the first broken promise (the run stops there).
    public func run(until deadline: Date? = nil, stop: () -> Bool = { false }) -> DataStorePowerLossReport {
        let c = configuration
        for i in 0..<c.cycles {
            if let deadline, Date() >= deadline { break }
            if stop() { break }
            cycle = i
            if i % max(1, c.cyclesPerStore) == 0 {
                if i > 0, let message = checkFinalImage() { return fail(message) }
                startStore()
            }
            if let message = runCycle() { return fail(message) }
            report.cyclesCompleted += 1
        }
        if report.cyclesCompleted > 0, let message = checkFinalImage() { return fail(message) }
        return report
    }

    func checkFinalImage() -> String? {
        let (message, interp) = openAndCheck(allowCrash: false)
        if let message { return message }
        do { try interp?.close() } catch { return "Tearing the store down after the last check failed: \(error)" }
        return nil
    }

    func startStore() {
        fs = FaultInjectingFileSystem()
        oracle = CrashOracle()
        let parent = FaultInjectingFileSystem.parent(configuration.directory)
        do {
            try fs.createDirectory(atPath: parent)
            try fs.syncDirectory(atPath: FaultInjectingFileSystem.parent(parent))
        } catch {
            note("setting up the parent directory failed: \(error)")
        }
        note("new store")
    }

    func makeInterpreter(model: DataStoreCrashModel) -> DataStoreCrashInterpreter {
        let fs = self.fs
        let dir = configuration.directory
        let options = self.options
        return DataStoreCrashInterpreter(model: model) { LogDataStore(path: dir, fileSystem: fs, options: options) }
    }

    /// One cycle: open + check, workload with an armed crash, crash image. Returns a failure message.
    func runCycle() -> String? {
        let (message, opened) = openAndCheck(allowCrash: true)
        if let message { return message }
        guard let interp = opened else { return nil }
        let steps = rng.int(in: 1...max(1, configuration.maxStepsPerCycle))
        let crashAt = rng.int(in: 0...(steps + steps / 2 + 2))
        fs.scheduleCrash(afterMutatingOperations: crashAt)
        // Some cycles aim at one kind of step: its first occurrence re-arms the crash point to
        // one of its first few I/O operations, so that merges and reopens are hit often.
        var target = rng.chance(configuration.targetedCrashFraction) ? Self.targets[rng.int(in: 0..<Self.targets.count)] : nil
        // (Until the target step comes, a later random crash point stays armed.)
        if target != nil { fs.scheduleCrash(afterMutatingOperations: crashAt + 2 * steps) }
        note(
            "workload of \(steps) steps, "
                + (target.map { "crash early in the first \($0) or after \(crashAt + 2 * steps) mutating operations" }
                    ?? "crash after \(crashAt) more mutating operations"))
        var interrupted = "idle"
        var mix = workload
        if target == "merge" {
            // Make sure the cycle reaches a merge of a child with writes.
            mix.makeChildProbability = max(mix.makeChildProbability, 0.6)
            mix.mergeProbability = max(mix.mergeProbability, 0.35)
        } else if target == "compact" {
            mix.compactProbability = max(mix.compactProbability, 0.25)
        }
        for _ in 0..<steps {
            let step = mix.nextStep(model: interp.model, rng: &rng)
            if step.name == target {
                let n = rng.int(in: 0...8)
                fs.scheduleCrash(afterMutatingOperations: n)
                note("\(step.name): crash after \(n) more mutating operations")
                target = nil
            }
            do {
                try interp.run(
                    step,
                    willCommit: { n, ops, _ in
                        let k = oracle.begin(ops)
                        if k != n { note("model and oracle disagree: model says txn \(n), oracle \(k)") }
                    },
                    didCommit: { n in
                        oracle.acknowledge(n)
                        report.acknowledged[step.name, default: 0] += 1
                    })
                report.steps[step.name, default: 0] += 1
                note(step.summary + " -> ok")
            } catch {
                if fs.isCrashed {
                    interrupted = step.name
                    note(step.summary + " -> crashed (\(shortError(error)))")
                    break
                }
                return "\(step.summary) failed without a crash: \(error)"
            }
        }
        report.compactionsPerformed += interp.compactionsPerformed
        if !fs.isCrashed {
            fs.crash()
            note("crash at a quiet point")
        }
        report.crashesDuring[interrupted, default: 0] += 1
        interp.abandon()
        makeImage()
        return nil
    }

    func shortError(_ error: any Error) -> String { FaultInjectingFileSystem.shortDescription(of: error) }

    func makeImage() {
        let next = fs.randomCrashImage(
            rng: &rng, processCrashFraction: configuration.processCrashFraction, model: configuration.powerLossModel)
        fs = next.image
        if next.isProcessCrash {
            report.processCrashImages += 1
        } else {
            report.powerLossImages += 1
            report.faults += fs.faultsApplied
        }
        note(next.description)
    }

    /// Sets the store up on the current image and checks it against the oracle, which then adopts
    /// what it shows. With `allowCrash`, the setup may be interrupted by a crash: then the next
    /// image replaces the file system and no interpreter is returned. Returns a failure message,
    /// or the interpreter holding the open store.
    func openAndCheck(allowCrash: Bool) -> (String?, DataStoreCrashInterpreter?) {
        let interp = makeInterpreter(model: DataStoreCrashModel())
        if allowCrash && rng.chance(configuration.crashDuringOpenFraction) {
            let n = rng.int(in: 0..<10)
            fs.scheduleCrash(afterMutatingOperations: n)
            note("setup, crash after \(n) mutating operations")
        }
        let tmpBefore = Set(((try? fs.contentsOfDirectory(atPath: configuration.directory)) ?? []).filter { $0.hasSuffix(".tmp") })
        do {
            try interp.open()
        } catch {
            if fs.isCrashed {
                report.crashesDuring["open", default: 0] += 1
                note("setup crashed (\(shortError(error)))")
                interp.abandon()
                makeImage()
                return (nil, nil)
            }
            return ("LogDataStore.setup() failed after a crash: \(error)", nil)
        }
        fs.cancelScheduledCrash()
        if fs.isCrashed {
            // The crash point armed for the setup was hit by background work (a compaction or
            // checkpoint started at open) just after setup() returned: a crash during the open.
            report.crashesDuring["open", default: 0] += 1
            note("crashed in background work started by setup()")
            interp.abandon()
            makeImage()
            return (nil, nil)
        }
        let before = (ack: oracle.lastAcknowledged, attempted: oracle.lastAttempted)
        do {
            let k = try oracle.check(interp.observe())
            // Recovery removes the temporary files a crash left. With background maintenance, a
            // compaction started by setup() may already be writing MANIFEST.tmp or CHECKPOINT.tmp:
            // then only the crash's own child spill files are checked.
            var leftovers = try fs.contentsOfDirectory(atPath: configuration.directory).filter { $0.hasSuffix(".tmp") }
            if configuration.backgroundMaintenance { leftovers = leftovers.filter { tmpBefore.contains($0) && $0.hasPrefix("child-") } }
            if !leftovers.isEmpty {
                return ("After setup() the store directory still holds temporary files: \(leftovers.joined(separator: ", ")).", nil)
            }
            oracle.adoptRecovered(k)
            interp.model = DataStoreCrashModel(parent: oracle.acknowledgedState, lastTransaction: k)
            report.unacknowledgedSurvived += Int(k - before.ack)
            report.unacknowledgedLost += Int(before.attempted - k)
            note("setup ok: k=\(k) (acknowledged \(before.ack), attempted \(before.attempted))")
        } catch {
            return ("After recovery: \(error)", nil)
        }
        return (nil, interp)
    }
}
