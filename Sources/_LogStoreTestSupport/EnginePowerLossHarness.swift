public import LogStoreEngine

/// Runs ``CrashWorkloadStep``s against a ``LogEngine`` and keeps a ``CrashOracle`` in step.
///
/// Use from one thread. The engine it opens stays open until ``close()``, a ``CrashWorkloadStep/reopen``
/// or the interpreter is released.
public final class EngineCrashInterpreter: CrashInterpreter {
    /// The store directory.
    public let directory: String
    /// The file system the store lives on.
    public let fileSystem: any FileSystem
    /// The options the store is opened with.
    public let options: LogEngineOptions
    /// The open engine, if any.
    public private(set) var engine: LogEngine?

    /// An interpreter for the store at `directory` on `fileSystem`. Opens nothing yet.
    public init(directory: String, fileSystem: any FileSystem, options: LogEngineOptions) {
        self.directory = directory
        self.fileSystem = fileSystem
        self.options = options
    }

    /// The secondary index the workload keeps on each of its item types. Its values are the
    /// workload's own bytes, not attribute maps, so every entry holds a missing value and its key:
    /// what the oracle checks is that entries come and go with the records, through commits,
    /// delete-alls, checkpoints and the replay after one.
    public static let index = IndexDefinition(name: "workload", attributes: [["v"]])

    /// Opens the store (recovering it), checks that the secondary indexes it recovered equal a
    /// rebuild from its records, and declares the workload's index (a no-op when recovery loaded
    /// it from a checkpoint). Throws what `LogEngine.open` throws, or a ``CrashOracleViolation``.
    @discardableResult
    public func open() throws -> LogEngine {
        let e = try LogEngine.open(directory: directory, fileSystem: fileSystem, options: options)
        engine = e
        try Self.checkIndexes(e)
        for type in DataStoreCrashTypes.itemTypes { try e.declareIndexes([Self.index], ofType: type) }
        return e
    }

    /// Throws a ``CrashOracleViolation`` unless every secondary index of the published state
    /// equals a rebuild from its records (index entries are derived data: a rebuild is the truth).
    public static func checkIndexes(_ e: LogEngine) throws {
        let problems = try e.snapshot().secondaryIndexProblems()
        if !problems.isEmpty {
            throw CrashOracleViolation("Secondary indexes differ from a rebuild from the records: " + problems.joined(separator: "; "))
        }
    }

    /// Closes the engine, if open. Throws what `LogEngine.close()` throws; the engine is dropped
    /// either way.
    public func close() throws {
        defer { engine = nil }
        try engine?.close()
    }

    /// Forgets the engine without closing it (the process "died"; its file system crashed).
    public func abandon() {
        if let e = engine { try? e.close() }
        engine = nil
    }

    /// Runs one step. A transaction is recorded in `oracle` as attempted before the commit; it is
    /// acknowledged (promised durable) when the commit returns under `.synchronous` durability,
    /// and otherwise only by a later flush. A reopen closes and reopens the store and checks that
    /// it shows exactly every transaction committed so far (a clean close loses nothing), which
    /// the oracle then adopts. Throws the engine's errors (or a ``CrashOracleViolation`` after a
    /// reopen) unchanged.
    public func run(_ step: CrashWorkloadStep, oracle: inout CrashOracle) throws {
        guard let engine else { throw LogStoreError(.notOpen, "EngineCrashInterpreter.run called with no open engine; call open() first.") }
        let synchronous = options.durability == .synchronous
        switch step {
        case .write(let ops):
            let n = oracle.begin(ops)
            try engine.write { t in
                for op in ops {
                    switch op {
                    case .put(let type, let key, let value): try t.put(type: type, key: key, value: value)
                    case .delete(let type, let key): try t.delete(type: type, key: key)
                    case .deleteAll(let type): try t.deleteAll(type: type)
                    }
                }
            }
            if synchronous { oracle.acknowledge(n) }
        case .commit(let ops):
            let n = oracle.begin(ops)
            try engine.commit(ops)
            if synchronous { oracle.acknowledge(n) }
        case .flush:
            let n = oracle.lastAttempted
            try engine.flush()
            oracle.acknowledge(n)
        case .reopen:
            try close()
            let e = try open()
            if let t = e.recoveryReport.truncatedTail {
                throw CrashOracleViolation("Reopening after a clean close cut a torn tail: \(t).")
            }
            let k = try oracle.check(observe())
            if k != oracle.lastAttempted || e.recoveryReport.lastSequence != k {
                throw CrashOracleViolation(
                    "Reopening after a clean close shows transaction \(k) (sequence \(e.recoveryReport.lastSequence)), expected \(oracle.lastAttempted)."
                )
            }
            oracle.adoptRecovered(k)
        }
    }

    /// Reads the whole published state of the open engine through `forEach`, and some of it
    /// through point reads (which must agree). Throws engine read errors, or a ``CrashOracleViolation`` if the two
    /// read paths or the index counts disagree.
    public func observe() throws -> CrashModelState {
        guard let engine else { throw LogStoreError(.notOpen, "EngineCrashInterpreter.observe called with no open engine.") }
        let snap = try engine.snapshot()
        var state: CrashModelState = [:]
        for type in snap.itemTypes.sorted() {
            var records: [RecordKey: [UInt8]] = [:]
            try snap.forEach(ofType: type) { k, v in
                records[k] = Array(v)
                return true
            }
            guard records.count == snap.count(ofType: type) else {
                throw CrashOracleViolation(
                    "\(type): forEach yields \(records.count) records, count(ofType:) says \(snap.count(ofType: type)).")
            }
            // Point reads of a few keys (a different read path, through the frame cache).
            for i in 0..<8 {
                let k = CrashWorkloadGenerator.itemKey(i * 5)
                guard let v = records[k] else { continue }
                guard let point = try snap.value(type: type, key: k), point.elementsEqual(v) else {
                    throw CrashOracleViolation("\(type)/\(k): a point read differs from forEach.")
                }
            }
            if !records.isEmpty { state[type] = records }
        }
        try Self.checkIndexes(engine)
        return state
    }
}

/// Settings of an ``EnginePowerLossHarness`` run: the shared ``PowerLossRunSettings`` (20 cycles
/// per store, at most 8 steps per cycle, the standard power-loss model), read as its own fields.
public struct PowerLossConfiguration: PowerLossConfiguring, Sendable {
    /// Seed, cycles and the settings every harness has.
    public var run: PowerLossRunSettings
    /// Engine options. Default: synchronous durability, 64 KiB segments (frequent roll-overs),
    /// 512-byte frames (multi-frame transactions), 16 KiB of preallocated tail (on the committing
    /// thread; half the stores of a run draw a growing tail instead, ``PreallocationChoice``). With `.none` durability the workload adds
    /// flush steps and only flushed transactions count as acknowledged (many unsynced
    /// transactions per crash). Do not use `.buffered`: its timer makes runs irreproducible.
    public var options: LogEngineOptions
    /// The workload mix.
    public var workload = CrashWorkloadGenerator()

    /// A configuration with the defaults above.
    public init(seed: UInt64, cycles: Int) {
        run = PowerLossRunSettings(seed: seed, cycles: cycles, cyclesPerStore: 20, maxStepsPerCycle: 8)
        var o = LogEngineOptions()
        o.durability = .synchronous
        o.segmentSize = 64 << 10
        o.maxFramePayload = 512
        o.cacheSize = 256 << 10
        o.preallocationSize = 16 << 10
        o.preallocatesInBackground = false
        options = o
    }

}

/// What a power-loss run did, and the first broken promise it found (if any): the shared
/// ``PowerLossCounts`` (read as its own fields) and the engine's own counters.
public struct PowerLossReport: PowerLossTally, Sendable, CustomStringConvertible {
    /// Seed, cycles, images, faults, failure.
    public var counts: PowerLossCounts
    /// Transactions whose commit returned.
    public var transactionsCommitted = 0
    /// Flush steps that returned.
    public var flushes = 0
    /// Opens interrupted by a crash (recovery crashed, then recovered again).
    public var crashesDuringOpen = 0
    /// Clean close-and-reopen steps.
    public var cleanReopens = 0
    /// Recoveries that cut a torn tail.
    public var tornTailsCut = 0
    /// Files recovery removed (temporary manifests, orphan segments).
    public var filesRemovedByRecovery = 0
    /// Stores that recovery had to create from scratch after a crash during creation.
    public var storesCreated = 0

    /// Creates an empty report for `seed`.
    public init(seed: UInt64) { counts = PowerLossCounts(seed: seed) }

    /// A multi-line summary.
    public var description: String {
        var s =
            "power-loss run seed \(counts.seed): \(counts.cyclesCompleted) cycles, \(transactionsCommitted) transactions committed, \(flushes) flushes, "
        s += counts.inFlightAndImages + "; "
        s +=
            "crashes during open \(crashesDuringOpen), clean reopens \(cleanReopens), torn tails cut \(tornTailsCut), files removed by recovery \(filesRemovedByRecovery), stores created \(storesCreated)\n"
        s += "faults: \(counts.faults)"
        if let failure = counts.failure { s += "\nFAILED: \(failure)" }
        return s
    }
}

/// A broken promise found by a power-loss run, with the seed and recent events to reproduce it.
public struct PowerLossFailure: Error, Sendable, CustomStringConvertible {
    /// The run's seed.
    public var seed: UInt64
    /// The cycle (0-based) in which the failure was found.
    public var cycle: Int
    /// What is wrong.
    public var message: String
    /// The last events before the failure, oldest first.
    public var recentEvents: [String]

    /// Seed, cycle, message and recent events.
    public var description: String {
        "seed \(seed), cycle \(cycle): \(message)\nrecent events:\n  " + recentEvents.joined(separator: "\n  ")
    }
}

/// The engine-level simulated power-loss harness (Docs/Testing.md, "Power-loss harness").
///
/// Each cycle opens the store on the current crash image (sometimes crashing inside the open, i.e.
/// during recovery, and recovering again), checks it with the ``CrashOracle``, runs a random
/// workload with a crash point armed at a random mutating I/O operation, and replaces the file
/// system with a power-loss or process-crash image of it. Every `cyclesPerStore` cycles a fresh
/// store is started. Deterministic given the configuration's seed. The cycle loop, images and
/// event log are ``PowerLossDriver``'s, shared with ``DataStorePowerLossHarness``.
///
/// Use from one thread; ``run()`` blocks until the run ends or the first failure.
public final class EnginePowerLossHarness: PowerLossDriver<EngineCrashInterpreter, PowerLossReport> {
    /// The run's settings.
    public let configuration: PowerLossConfiguration

    /// A harness for `configuration`.
    public init(_ configuration: PowerLossConfiguration) {
        self.configuration = configuration
        let directory = configuration.directory
        let choice = PreallocationChoice(configuration.options)
        tail = choice
        super.init(
            configuration.run, report: PowerLossReport(seed: configuration.seed), events: (80, 60), openName: "open",
            makeInterpreter: { fs in EngineCrashInterpreter(directory: directory, fileSystem: fs, options: choice.options) })
    }

    /// Whether the current store preallocates its tail.
    let tail: PreallocationChoice

    /// Runs every cycle, then opens and checks the last crash image. Returns the report; its
    /// ``PowerLossReport/failure`` is set at the first broken promise (the run stops there).
    public func run() -> PowerLossReport { runCycles() }

    /// Half of the stores get their directory durably in advance; the engine creates the others.
    override func prepareStore() {
        let preCreate = rng.chance(0.5)
        if preCreate {
            do {
                try fs.createDirectory(atPath: configuration.directory)
                try fs.syncDirectory(atPath: FaultInjectingFileSystem.parent(configuration.directory))
            } catch {
                note("setting up the store directory failed: \(error)")
            }
        }
        note("new store (\(preCreate ? "directory created durably in advance" : "engine creates the directory"), \(tail.draw(&rng)))")
    }

    override func open(_ interpreter: EngineCrashInterpreter) throws { try interpreter.open() }

    /// The crash armed for the open hit work the open started on its way out (the first zeros
    /// written ahead of a preallocated tail), whose failure the open does not throw.
    override func crashedAfterOpen() -> Bool { fs.isCrashed }

    override func countCrashDuringOpen() { report.crashesDuringOpen += 1 }

    override func check(_ interpreter: EngineCrashInterpreter) -> String? {
        guard let engine = interpreter.engine else { return "The engine is not open after a successful open." }
        let r = engine.recoveryReport
        if r.truncatedTail != nil { report.tornTailsCut += 1 }
        report.filesRemovedByRecovery += r.removedFiles.count
        if r.created && oracle.lastAttempted > 0 { report.storesCreated += 1 }
        let before = (ack: oracle.lastAcknowledged, attempted: oracle.lastAttempted)
        do {
            let k = try oracle.check(interpreter.observe())
            let snapSeq = try engine.snapshot().sequence
            guard snapSeq == k, r.lastSequence == k else {
                return "The store shows transactions 1...\(k) but its sequence is \(snapSeq) (recovery report: \(r.lastSequence))."
            }
            adoptRecovered(k, before: before)
            note("open ok: k=\(k) (acknowledged \(before.ack), attempted \(before.attempted)); recovery: \(describe(r))")
        } catch {
            return "After recovery (\(describe(r))): \(error)"
        }
        return nil
    }

    override func runWorkload(_ interpreter: EngineCrashInterpreter) -> String? {
        let steps = drawStepCount()
        // About two mutating operations per transaction (append, fdatasync); a roll-over adds ten.
        let crashAt = rng.int(in: 0..<(2 * steps + 3))
        fs.scheduleCrash(afterMutatingOperations: crashAt)
        note("workload of \(steps) steps, crash after \(crashAt) more mutating operations")
        for _ in 0..<steps {
            let step = configuration.workload.nextStep(oracle: oracle, flushes: configuration.options.durability != .synchronous, rng: &rng)
            do {
                try interpreter.run(step, oracle: &oracle)
                switch step {
                case .reopen: report.cleanReopens += 1
                case .flush: report.flushes += 1
                case .write, .commit: report.transactionsCommitted += 1
                }
                note(step.summary + " -> ok")
            } catch {
                if fs.isCrashed {
                    note(step.summary + " -> crashed (\(shortError(error)))")
                    break
                }
                return "\(step.summary) failed without a crash: \(error)"
            }
        }
        return nil
    }

    func describe(_ r: RecoveryReport) -> String {
        var parts = ["\(r.transactionsReplayed) txns in \(r.segmentsScanned) segments"]
        if r.created { parts.append("created") }
        if let t = r.truncatedTail { parts.append("cut: \(t)") }
        if !r.removedFiles.isEmpty { parts.append("removed \(r.removedFiles.joined(separator: ","))") }
        return parts.joined(separator: ", ")
    }
}
