public import Foundation
public import LogStore
import LogStoreEngine

/// Settings of a ``DataStorePowerLossHarness`` run: the shared ``PowerLossRunSettings`` (40 cycles
/// per store, at most 10 steps per cycle, dirty sectors reordered in a quarter of the files with
/// unsynced data: commits are synchronous, so at most one is unsynced at a time), read as its own
/// fields, plus what the DataStore workload adds.
public struct DataStorePowerLossConfiguration: PowerLossConfiguring, Sendable {
    /// Seed, cycles and the settings every harness has.
    public var run: PowerLossRunSettings
    /// The share of cycles that aim their crash at the first merge, reopen, async write, child
    /// write, compaction or migration of the cycle (a crash at one of its first I/O operations,
    /// or, in a quarter of them, a few operations after it completes; if there is no such step,
    /// at a random later operation or at the end of the cycle).
    public var targetedCrashFraction = 0.35
    /// Store options. Default: synchronous durability, 64 KiB segments (frequent roll-overs),
    /// 512-byte frames (multi-frame transactions), 2 KiB child spill threshold (children spill
    /// to a temporary file in the store directory), 16 KiB of preallocated tail (on the committing
    /// thread; half the stores of a run draw a growing tail instead, ``PreallocationChoice``).
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
        var model = PowerLossModel()
        model.sectorReorderingProbability = 0.25
        run = PowerLossRunSettings(seed: seed, cycles: cycles, cyclesPerStore: 40, maxStepsPerCycle: 10, powerLossModel: model)
        var o = LogStoreOptions()
        o.durability = .synchronous
        o.segmentSize = 64 << 10
        o.maxFramePayload = 512
        o.cacheSize = 256 << 10
        o.childSpillThreshold = 2 << 10
        o.autoCompaction = false
        o.autoRecompression = false
        // Small stores: recompression steps train dictionaries from 4 KiB of values.
        o.engine.dictionaryTrainingMinimumBytes = 4 << 10
        o.checkpointInterval = 0
        o.compactionThreshold = 0.3
        o.compactionMinimumDeadBytes = 8 << 10
        o.preallocationSize = 16 << 10
        o.preallocatesInBackground = false
        options = o
    }

    /// `options` with background compaction (once 30% and 8 KiB of the sealed segments are
    /// dead), background recompression (after 20 ms without a commit), background checkpoints (every 48 KiB of log) and background preallocation on.
    public static func withBackgroundMaintenance(_ options: LogStoreOptions) -> LogStoreOptions {
        var o = options
        o.autoCompaction = true
        o.autoRecompression = true
        o.recompressionIdleDelay = .milliseconds(20)
        o.compactionThreshold = 0.3
        o.compactionMinimumDeadBytes = 8 << 10
        o.checkpointInterval = 48 << 10
        o.preallocatesInBackground = true
        return o
    }

}

/// What a DataStore power-loss run did, and the first broken promise it found (if any): the
/// shared ``PowerLossCounts`` (read as its own fields) and the DataStore's own counters.
public struct DataStorePowerLossReport: PowerLossTally, Sendable, CustomStringConvertible {
    /// Seed, cycles, images, faults, failure.
    public var counts: PowerLossCounts
    /// Parent transactions whose commit returned, by kind (`write`, `async`, `merge`).
    public var acknowledged: [String: Int] = [:]
    /// Steps run to completion, by step name.
    public var steps: [String: Int] = [:]
    /// The step a crash interrupted, by step name ("open" for a crash during recovery, "idle"
    /// for a crash between steps).
    public var crashesDuring: [String: Int] = [:]
    /// Compaction steps that rewrote segments.
    public var compactionsPerformed = 0

    /// Creates an empty report for `seed`.
    public init(seed: UInt64) { counts = PowerLossCounts(seed: seed) }

    /// Every acknowledged transaction.
    public var transactionsAcknowledged: Int { acknowledged.values.reduce(0, +) }

    static func list(_ d: [String: Int]) -> String {
        d.keys.sorted().map { "\($0) \(d[$0] ?? 0)" }.joined(separator: ", ")
    }

    /// A multi-line summary.
    public var description: String {
        var s =
            "DataStore power-loss run seed \(counts.seed): \(counts.cyclesCompleted) cycles, \(transactionsAcknowledged) acknowledged transactions (\(Self.list(acknowledged))), "
        s += counts.inFlightAndImages + "\n"
        s +=
            "steps: \(Self.list(steps)); compactions performed \(compactionsPerformed)\ncrashes during: \(Self.list(crashesDuring))\nfaults: \(counts.faults)"
        if let failure = counts.failure { s += "\nFAILED: \(failure)" }
        return s
    }
}

/// The DataStore-level simulated power-loss harness (Docs/Testing.md, "Crash recovery").
///
/// Like ``EnginePowerLossHarness``, but through `LogDataStore` with the DataStore workload: each
/// cycle sets the store up on the current crash image (sometimes crashing inside `setup()`, i.e.
/// during recovery), checks it with the ``CrashOracle`` (a merge is one transaction), runs random
/// steps (``DataStoreCrashWorkloadGenerator``) with a crash point armed at a random mutating I/O
/// operation, and replaces the file system with a power-loss or process-crash image. The cycle
/// loop, images and event log are ``PowerLossDriver``'s. Deterministic given the configuration's
/// seed (with background maintenance off).
///
/// Use from one thread; ``run(until:stop:)`` blocks until the run ends or the first failure.
public final class DataStorePowerLossHarness: PowerLossDriver<DataStoreCrashInterpreter, DataStorePowerLossReport> {
    /// The run's settings.
    public let configuration: DataStorePowerLossConfiguration
    let workload: DataStoreCrashWorkloadGenerator
    /// Temporary files in the store directory just before the current setup.
    var temporaryFilesBeforeOpen: Set<String> = []

    /// A harness for `configuration`.
    public init(_ configuration: DataStorePowerLossConfiguration) {
        self.configuration = configuration
        workload = configuration.workload
        let options =
            configuration.backgroundMaintenance
            ? DataStorePowerLossConfiguration.withBackgroundMaintenance(configuration.options) : configuration.options
        let directory = configuration.directory
        let choice = PreallocationChoice(options.engine)
        tail = choice
        super.init(
            configuration.run, report: DataStorePowerLossReport(seed: configuration.seed), events: (100, 80), openName: "setup",
            makeInterpreter: { fs in
                var options = options
                options.engine = choice.options
                let interpreter = DataStoreCrashInterpreter(model: DataStoreCrashModel()) {
                    LogDataStore(path: directory, fileSystem: fs, options: options)
                }
                // Without synchronous durability only flushed commits are promised; flushing every
                // third leaves batches of unsynced transactions for the crash to reorder.
                if options.durability != .synchronous { interpreter.flushEvery = 3 }
                return interpreter
            })
    }

    /// Merges and migrations are listed twice: both are aimed at twice as often as the others.
    static let targets = ["merge", "merge", "reopen", "writeAsync", "childWrite", "compact", "migrate", "migrate"]

    /// The share of targeted cycles whose target step runs to its end, with the crash armed a
    /// few mutating operations after it.
    static let completedTargetFraction = 0.25

    /// Runs every cycle (or until `deadline`, or until `stop` returns true; it is asked before
    /// each cycle), then opens and checks the last crash image. Returns the report; its
    /// ``DataStorePowerLossReport/failure`` is set at the first broken promise (the run stops there).
    public func run(until deadline: Date? = nil, stop: () -> Bool = { false }) -> DataStorePowerLossReport {
        runCycles(until: deadline, stop: stop)
    }

    override func prepareStore() { note("new store (\(tail.draw(&rng)))") }

    /// Whether the current store preallocates its tail.
    let tail: PreallocationChoice

    override func open(_ interpreter: DataStoreCrashInterpreter) throws {
        temporaryFilesBeforeOpen = Set(
            ((try? fs.contentsOfDirectory(atPath: configuration.directory)) ?? []).filter { $0.hasSuffix(".tmp") })
        try interpreter.open()
    }

    override func crashedAfterOpen() -> Bool { fs.isCrashed }

    override func countCrashDuringOpen() { report.crashesDuring["open", default: 0] += 1 }

    override func check(_ interpreter: DataStoreCrashInterpreter) -> String? {
        let before = (ack: oracle.lastAcknowledged, attempted: oracle.lastAttempted)
        do {
            let k = try oracle.check(interpreter.observe())
            // Recovery removes the temporary files a crash left. With background maintenance, a
            // compaction started by setup() may already be writing MANIFEST.tmp or CHECKPOINT.tmp:
            // then only the crash's own child spill files are checked.
            // The open itself may write a new preallocation spare (a recovered tail written up to
            // the segment size).
            var leftovers = try fs.contentsOfDirectory(atPath: configuration.directory).filter {
                $0.hasSuffix(".tmp") && $0 != Preallocator.spareName
            }
            if configuration.backgroundMaintenance {
                leftovers = leftovers.filter { temporaryFilesBeforeOpen.contains($0) && $0.hasPrefix("child-") }
            }
            if !leftovers.isEmpty {
                return "After setup() the store directory still holds temporary files: \(leftovers.joined(separator: ", "))."
            }
            adoptRecovered(k, before: before)
            interpreter.model = DataStoreCrashModel(parent: oracle.acknowledgedState, lastTransaction: k)
            note("setup ok: k=\(k) (acknowledged \(before.ack), attempted \(before.attempted))")
        } catch {
            return "After recovery: \(error)"
        }
        return nil
    }

    override func runWorkload(_ interpreter: DataStoreCrashInterpreter) -> String? {
        let steps = drawStepCount()
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
        } else if target == "migrate" {
            mix.migrateProbability = max(mix.migrateProbability, 0.2)
        }
        // A quarter of the targeted cycles let the target step finish and crash just after it,
        // so that every kind of step also completes in every run (a migration or a reopen is
        // long enough that a random crash point almost always lands inside it).
        var crashAfterTarget: Int?
        for _ in 0..<steps {
            let step = mix.nextStep(model: interpreter.model, rng: &rng)
            if step.name == target {
                let n = rng.int(in: 0...8)
                if rng.chance(Self.completedTargetFraction) {
                    fs.cancelScheduledCrash()
                    crashAfterTarget = n
                    note("\(step.name): runs to the end, crash after \(n) more mutating operations")
                } else {
                    fs.scheduleCrash(afterMutatingOperations: n)
                    note("\(step.name): crash after \(n) more mutating operations")
                }
                target = nil
            }
            do {
                try interpreter.run(
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
                if let n = crashAfterTarget {
                    fs.scheduleCrash(afterMutatingOperations: n)
                    crashAfterTarget = nil
                }
            } catch {
                if fs.isCrashed {
                    interrupted = step.name
                    note(step.summary + " -> crashed (\(shortError(error)))")
                    break
                }
                return "\(step.summary) failed without a crash: \(error)"
            }
        }
        report.compactionsPerformed += interpreter.compactionsPerformed
        report.crashesDuring[interrupted, default: 0] += 1
        return nil
    }
}
