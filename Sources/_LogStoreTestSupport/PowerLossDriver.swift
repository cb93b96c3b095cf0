import Foundation

/// What the power-loss driver needs of an interpreter: forget the store without a clean close
/// (the process died) or close it.
public protocol CrashInterpreter: AnyObject {
    /// Drops the open store without a clean close.
    func abandon()
    /// Closes the open store.
    func close() throws
}

/// Settings every power-loss run has, whatever it crashes. The harnesses' configurations hold one
/// (``PowerLossConfiguration/run``, ``DataStorePowerLossConfiguration/run``) and expose its fields
/// as their own (`configuration.seed`).
public struct PowerLossRunSettings: Sendable {
    /// The seed every random decision of the run derives from.
    public var seed: UInt64
    /// How many crash cycles to run (each: open + check, a workload, a crash, a crash image).
    public var cycles: Int
    /// A fresh, empty store is started every this many cycles (bounds the log's size).
    public var cyclesPerStore: Int
    /// The most workload steps between two crashes.
    public var maxStepsPerCycle: Int
    /// The share of crashes that are process crashes (`kill -9`) rather than power losses.
    public var processCrashFraction = 0.2
    /// The probability that an open is itself interrupted by a crash (during recovery).
    public var crashDuringOpenFraction = 0.15
    /// The store directory on the fault-injecting file system.
    public var directory = "/data/store"
    /// How power-loss images are built.
    public var powerLossModel: PowerLossModel

    /// Settings with the given seed, size and defaults for the rest.
    public init(seed: UInt64, cycles: Int, cyclesPerStore: Int, maxStepsPerCycle: Int, powerLossModel: PowerLossModel = PowerLossModel()) {
        self.seed = seed
        self.cycles = cycles
        self.cyclesPerStore = cyclesPerStore
        self.maxStepsPerCycle = maxStepsPerCycle
        self.powerLossModel = powerLossModel
    }
}

/// Counters every power-loss report has. The harnesses' reports hold one
/// (``PowerLossReport/counts``, ``DataStorePowerLossReport/counts``) and expose its fields as their
/// own (`report.cyclesCompleted`).
public struct PowerLossCounts: Sendable {
    /// The run's seed (rerun with it to reproduce).
    public var seed: UInt64
    /// Crash cycles completed.
    public var cyclesCompleted = 0
    /// In-flight (unacknowledged) transactions found complete after the crash.
    public var unacknowledgedSurvived = 0
    /// In-flight transactions absent after the crash.
    public var unacknowledgedLost = 0
    /// Power-loss crash images built.
    public var powerLossImages = 0
    /// Process-crash images built.
    public var processCrashImages = 0
    /// The faults applied by every power-loss image.
    public var faults = FaultCounts()
    /// The first failure, or nil if every check passed.
    public var failure: PowerLossFailure?

    /// Empty counters for a run of `seed`.
    public init(seed: UInt64) { self.seed = seed }

    /// "in-flight survived N / lost M; images: N power loss, M process crash".
    var inFlightAndImages: String {
        "in-flight survived \(unacknowledgedSurvived) / lost \(unacknowledgedLost); images: \(powerLossImages) power loss, \(processCrashImages) process crash"
    }
}

/// A harness configuration: the shared settings plus whatever its harness adds. The shared
/// fields read and write as the configuration's own (`configuration.seed`).
@dynamicMemberLookup
public protocol PowerLossConfiguring {
    /// Seed, cycles and the settings every harness has.
    var run: PowerLossRunSettings { get set }
}

extension PowerLossConfiguring {
    /// A field of ``run``, read and written as this value's own.
    public subscript<T>(dynamicMember key: WritableKeyPath<PowerLossRunSettings, T>) -> T {
        get { run[keyPath: key] }
        set { run[keyPath: key] = newValue }
    }
}

/// A power-loss report: its shared counters plus whatever its harness adds. The shared fields
/// read and write as the report's own (`report.cyclesCompleted`).
@dynamicMemberLookup
public protocol PowerLossTally {
    /// The counters every run keeps.
    var counts: PowerLossCounts { get set }
}

extension PowerLossTally {
    /// A field of ``counts``, read and written as this value's own.
    public subscript<T>(dynamicMember key: WritableKeyPath<PowerLossCounts, T>) -> T {
        get { counts[keyPath: key] }
        set { counts[keyPath: key] = newValue }
    }
}

/// The part of a simulated power-loss run that does not depend on what is crashed (a
/// `LogEngine` or a `LogDataStore`): the cycle loop, fresh stores, crash images, crashes armed
/// during the open, the event log and the failure. ``EnginePowerLossHarness`` and
/// ``DataStorePowerLossHarness`` subclass it and supply what differs: making, opening and checking
/// an interpreter, and the workload of one cycle.
///
/// A cycle: open the store on the current image (with `crashDuringOpenFraction`, a crash is armed
/// inside the open, so recovery itself crashes and is recovered from on the next image), check it,
/// run the workload with a crash armed, crash at a quiet point if nothing crashed, and replace the
/// file system with a power-loss or process-crash image. Every `cyclesPerStore` cycles the last
/// image is opened and checked once more and a fresh store starts. Deterministic given the seed:
/// every random decision comes from ``rng`` in a fixed order.
///
/// Use from one thread; not thread-safe.
public class PowerLossDriver<Interpreter: CrashInterpreter, Report: PowerLossTally> {
    let seed: UInt64
    let cycles: Int
    let cyclesPerStore: Int
    let maxStepsPerCycle: Int
    let processCrashFraction: Double
    let crashDuringOpenFraction: Double
    let powerLossModel: PowerLossModel
    let directory: String
    /// The event log keeps at most `eventLimit` events, trimmed to `eventKeep`.
    let eventLimit: Int
    let eventKeep: Int
    /// "open" or "setup", in events.
    let openName: String
    /// A new interpreter for the store on the given (current) file system.
    let makeInterpreter: (FaultInjectingFileSystem) -> Interpreter

    var rng: SplitMix64
    var report: Report
    var events: [String] = []
    var cycle = 0
    var fs = FaultInjectingFileSystem()
    var oracle = CrashOracle()

    init(
        _ settings: PowerLossRunSettings, report: Report, events: (limit: Int, keep: Int), openName: String,
        makeInterpreter: @escaping (FaultInjectingFileSystem) -> Interpreter
    ) {
        seed = settings.seed
        cycles = settings.cycles
        cyclesPerStore = settings.cyclesPerStore
        maxStepsPerCycle = settings.maxStepsPerCycle
        processCrashFraction = settings.processCrashFraction
        crashDuringOpenFraction = settings.crashDuringOpenFraction
        powerLossModel = settings.powerLossModel
        directory = settings.directory
        self.report = report
        eventLimit = events.limit
        eventKeep = events.keep
        self.openName = openName
        self.makeInterpreter = makeInterpreter
        rng = SplitMix64(seed: seed)
    }

    // MARK: What a harness supplies

    /// Called after a fresh file system and oracle are in place and the store's parent directory
    /// exists durably: anything else a new store needs.
    func prepareStore() {}
    /// Opens (sets up) the store.
    func open(_ interpreter: Interpreter) throws {}
    /// Whether a crash happened in background work started by the open, after it returned.
    func crashedAfterOpen() -> Bool { false }
    /// Counts a crash that interrupted the open.
    func countCrashDuringOpen() {}
    /// Checks the opened store against the oracle (which adopts what it shows). Returns a failure.
    func check(_ interpreter: Interpreter) -> String? { nil }
    /// Runs one cycle's workload with a crash armed. Returns a failure.
    func runWorkload(_ interpreter: Interpreter) -> String? { nil }

    // MARK: The run

    /// Runs every cycle (or until `deadline`, or until `stop` returns true; it is asked before
    /// each cycle), then opens and checks the last crash image. Returns the report; its failure is
    /// set at the first broken promise (the run stops there).
    func runCycles(until deadline: Date? = nil, stop: () -> Bool = { false }) -> Report {
        for i in 0..<cycles {
            if let deadline, Date() >= deadline { break }
            if stop() { break }
            cycle = i
            if i % max(1, cyclesPerStore) == 0 {
                if i > 0, let message = checkFinalImage() { return fail(message) }
                startStore()
            }
            if let message = runCycle() { return fail(message) }
            report.counts.cyclesCompleted += 1
        }
        if report.counts.cyclesCompleted > 0, let message = checkFinalImage() { return fail(message) }
        return report
    }

    func note(_ event: String) {
        events.append("[\(cycle)] " + event)
        if events.count > eventLimit { events.removeFirst(events.count - eventKeep) }
    }

    func fail(_ message: String) -> Report {
        var r = report
        r.counts.failure = PowerLossFailure(seed: seed, cycle: cycle, message: message, recentEvents: events)
        return r
    }

    func checkFinalImage() -> String? {
        let (message, interpreter) = openAndCheck(allowCrash: false)
        if let message { return message }
        do { try interpreter?.close() } catch { return "Closing the store after the last check failed: \(error)" }
        return nil
    }

    func startStore() {
        fs = FaultInjectingFileSystem()
        oracle = CrashOracle()
        let parent = FaultInjectingFileSystem.parent(directory)
        do {
            try fs.createDirectory(atPath: parent)
            try fs.syncDirectory(atPath: FaultInjectingFileSystem.parent(parent))
        } catch {
            // Cannot happen on a fresh, uncrashed file system; the next open would report it.
            note("setting up the parent directory failed: \(error)")
        }
        prepareStore()
    }

    /// One cycle: open + check, workload with an armed crash, crash image. Returns a failure.
    func runCycle() -> String? {
        let (message, opened) = openAndCheck(allowCrash: true)
        if let message { return message }
        // No interpreter: the open crashed and the next image is already in place.
        guard let interpreter = opened else { return nil }
        if let message = runWorkload(interpreter) { return message }
        if !fs.isCrashed {
            fs.crash()
            note("crash at a quiet point")
        }
        interpreter.abandon()
        makeImage()
        return nil
    }

    /// How many workload steps this cycle runs (1 to `maxStepsPerCycle`).
    func drawStepCount() -> Int { rng.int(in: 1...max(1, maxStepsPerCycle)) }

    /// The oracle adopts transaction `k` as what recovery showed (a later crash must not take it
    /// back); the transactions in flight at the crash (`before`: the oracle's marks before the
    /// check) are counted as survived or lost.
    func adoptRecovered(_ k: UInt64, before: (ack: UInt64, attempted: UInt64)) {
        oracle.adoptRecovered(k)
        report.counts.unacknowledgedSurvived += Int(k - before.ack)
        report.counts.unacknowledgedLost += Int(before.attempted - k)
    }

    func shortError(_ error: any Error) -> String { FaultInjectingFileSystem.shortDescription(of: error) }

    func makeImage() {
        let next = fs.randomCrashImage(rng: &rng, processCrashFraction: processCrashFraction, model: powerLossModel)
        fs = next.image
        if next.isProcessCrash {
            report.counts.processCrashImages += 1
        } else {
            report.counts.powerLossImages += 1
            report.counts.faults += fs.faultsApplied
        }
        note(next.description)
    }

    /// Opens the store on the current image and checks it. With `allowCrash`, the open may be
    /// interrupted by a crash: then the next image replaces the file system and no interpreter is
    /// returned. Returns a failure message, or the interpreter holding the open store.
    func openAndCheck(allowCrash: Bool) -> (String?, Interpreter?) {
        let interpreter = makeInterpreter(fs)
        if allowCrash && rng.chance(crashDuringOpenFraction) {
            let n = rng.int(in: 0..<10)
            fs.scheduleCrash(afterMutatingOperations: n)
            note("\(openName), crash after \(n) mutating operations")
        }
        do {
            try open(interpreter)
        } catch {
            if fs.isCrashed {
                countCrashDuringOpen()
                note("\(openName) crashed (\(shortError(error)))")
                interpreter.abandon()
                makeImage()
                return (nil, nil)
            }
            return ("\(openName) failed after a crash: \(error)", nil)
        }
        fs.cancelScheduledCrash()
        if crashedAfterOpen() {
            // The crash point armed for the open was hit by background work (a compaction or
            // checkpoint started at open) just after the open returned: a crash during the open.
            countCrashDuringOpen()
            note("crashed in background work started by \(openName)")
            interpreter.abandon()
            makeImage()
            return (nil, nil)
        }
        if let message = check(interpreter) { return (message, nil) }
        return (nil, interpreter)
    }
}
