public import LogStoreEngine

/// Settings of an ``EngineCrashPointSweep``.
public struct CrashPointSweepConfiguration: Sendable {
    /// The seed of the power-loss images and of the follow-up transactions.
    public var seed: UInt64
    /// The workload replayed once per crash point, on a fresh store (see
    /// ``CrashWorkloadGenerator/steps(_:flushes:rng:)``).
    public var steps: [CrashWorkloadStep]
    /// Power-loss images checked per crash point (a process-crash image is always checked too).
    public var powerLossImagesPerPoint = 3
    /// The store directory; its parent is created durably, the store directory by the engine.
    public var directory = "/data/store"
    /// Engine options; the defaults of ``PowerLossConfiguration``.
    public var options: LogEngineOptions
    /// Harsher power-loss faults for the images (default: the standard model).
    public var powerLossModel = PowerLossModel()

    /// A sweep of `steps` with the default options.
    public init(seed: UInt64, steps: [CrashWorkloadStep]) {
        self.seed = seed
        self.steps = steps
        options = PowerLossConfiguration(seed: seed, cycles: 0).options
    }
}

/// What a crash-point sweep did, and the first broken promise it found (if any).
public struct CrashPointSweepReport: Sendable, CustomStringConvertible {
    /// The sweep's seed.
    public var seed: UInt64
    /// Mutating I/O operations of the uncrashed run (open included); the sweep crashes before
    /// each of them and once after the last.
    public var crashPoints = 0
    /// Segments the uncrashed run ended with (more than one means roll-overs were swept).
    public var segmentsAtEnd = 0
    /// Crash images opened and checked (follow-up images included).
    public var imagesChecked = 0
    /// Faults applied by the power-loss images.
    public var faults = FaultCounts()
    /// The first failure, or nil.
    public var failure: PowerLossFailure?

    /// Creates an empty report.
    public init(seed: UInt64) { self.seed = seed }

    /// A summary.
    public var description: String {
        var s =
            "crash-point sweep seed \(seed): \(crashPoints + 1) crash points, \(segmentsAtEnd) segments at the end, \(imagesChecked) images checked\nfaults: \(faults)"
        if let failure { s += "\nFAILED: \(failure)" }
        return s
    }
}

/// Crashes one fixed workload at every mutating I/O operation in turn (store creation, appends,
/// fsyncs, segment roll-overs with their manifest rewrite), and checks each crash's images with
/// the ``CrashOracle``: a process-crash image and several power-loss images. After each check it
/// commits one more (durable) transaction on the recovered store and checks a power-loss image of
/// that too, which catches recoveries that build on state they never made durable.
///
/// Exhaustive where ``EnginePowerLossHarness`` samples. Use from one thread; ``run()`` blocks.
public final class EngineCrashPointSweep {
    /// The sweep's settings.
    public let configuration: CrashPointSweepConfiguration
    var report: CrashPointSweepReport
    var events: [String] = []
    var point = 0

    /// A sweep for `configuration`.
    public init(_ configuration: CrashPointSweepConfiguration) {
        self.configuration = configuration
        report = CrashPointSweepReport(seed: configuration.seed)
    }

    func note(_ e: String) {
        events.append("[point \(point)] " + e)
        if events.count > 60 { events.removeFirst(events.count - 40) }
    }

    func fail(_ message: String) -> CrashPointSweepReport {
        var r = report
        r.failure = PowerLossFailure(seed: configuration.seed, cycle: point, message: message, recentEvents: events)
        return r
    }

    func freshFileSystem() throws -> FaultInjectingFileSystem {
        let fs = FaultInjectingFileSystem()
        let parent = FaultInjectingFileSystem.parent(configuration.directory)
        try fs.createDirectory(atPath: parent)
        try fs.syncDirectory(atPath: FaultInjectingFileSystem.parent(parent))
        return fs
    }

    func interpreter(_ fs: FaultInjectingFileSystem) -> EngineCrashInterpreter {
        EngineCrashInterpreter(directory: configuration.directory, fileSystem: fs, options: configuration.options)
    }

    /// Runs the sweep. Returns the report; its ``CrashPointSweepReport/failure`` is set at the
    /// first broken promise (the sweep stops there).
    public func run() -> CrashPointSweepReport {
        // The uncrashed run: how many crash points there are.
        do {
            let fs = try freshFileSystem()
            let before = fs.mutatingOperationCount
            var oracle = CrashOracle()
            let interp = interpreter(fs)
            let engine = try interp.open()
            for step in configuration.steps { try interp.run(step, oracle: &oracle) }
            report.segmentsAtEnd = (interp.engine ?? engine).manifestInfo.segments.count
            try interp.close()
            report.crashPoints = fs.mutatingOperationCount - before
        } catch {
            return fail("The workload fails without any crash: \(error)")
        }
        for p in 0...report.crashPoints {
            point = p
            if let message = sweep(p) { return fail(message) }
        }
        return report
    }

    func sweep(_ p: Int) -> String? {
        let fs: FaultInjectingFileSystem
        do { fs = try freshFileSystem() } catch { return "setup failed: \(error)" }
        var oracle = CrashOracle()
        fs.scheduleCrash(afterMutatingOperations: p)
        let interp = interpreter(fs)
        do {
            try interp.open()
            for step in configuration.steps {
                note(step.summary)
                try interp.run(step, oracle: &oracle)
            }
        } catch {
            if !fs.isCrashed { return "Failed without a crash: \(error)" }
            note("crashed: \(error)")
        }
        fs.crash()
        interp.abandon()
        var rng = SplitMix64(seed: configuration.seed ^ (UInt64(p) &* 0x9E37_79B9))
        var images = [("process crash", fs.processCrashImage())]
        for j in 0..<configuration.powerLossImagesPerPoint {
            let seed = rng.next()
            images.append(("power loss \(j) (seed \(seed))", fs.powerLossImage(seed: seed, model: configuration.powerLossModel)))
        }
        for (name, image) in images {
            report.faults += image.faultsApplied
            var o = oracle
            if let message = check(image, name, &o) { return message }
            // Build on the recovered store, then lose power.
            let followUp = interpreter(image)
            do {
                try followUp.open()
                let ops = CrashWorkloadGenerator().transaction(number: o.lastAttempted + 1, state: o.headState, rng: &rng)
                try followUp.run(.commit(ops), oracle: &o)
                if configuration.options.durability != .synchronous { try followUp.run(.flush, oracle: &o) }
                try followUp.close()
            } catch {
                return "\(name): a transaction after recovery failed: \(error)"
            }
            let seed = rng.next()
            let after = image.powerLossImage(seed: seed, model: configuration.powerLossModel)
            report.faults += after.faultsApplied
            if let message = check(after, "\(name), then a commit and a power loss (seed \(seed))", &o) { return message }
        }
        return nil
    }

    func check(_ fs: FaultInjectingFileSystem, _ name: String, _ oracle: inout CrashOracle) -> String? {
        report.imagesChecked += 1
        let interp = interpreter(fs)
        do {
            let engine = try interp.open()
            let k = try oracle.check(interp.observe())
            guard engine.recoveryReport.lastSequence == k else {
                return "\(name): the store shows transactions 1...\(k) but recovered sequence \(engine.recoveryReport.lastSequence)."
            }
            oracle.adoptRecovered(k)
            note("\(name): k=\(k)")
            try interp.close()
        } catch {
            return "\(name): \(error)"
        }
        return nil
    }
}
