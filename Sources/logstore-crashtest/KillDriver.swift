import ArgumentParser
import Foundation
import LogStore
import LogStoreEngine
import _LogStoreTestSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `logstore-crashtest kill` (the default): the kill -9 driver.
struct Kill: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Kill worker processes with SIGKILL at random moments and check every recovery against the oracle.",
        discussion: """
            Each cycle starts a worker (`logstore-crashtest worker`) on the store, lets it commit \
            randomized transactions (acknowledging each on stdout), sends SIGKILL at a random moment \
            (during open/recovery, during a commit, during a child merge, during a reopen, during a \
            migration applied by setup(), or at a \
            random time), then opens the store in this process and checks it: every acknowledged \
            transaction present and complete, no partial transaction, a prefix of the commit order \
            with no holes, deleted items not back, and the open itself succeeds. Stops at the first \
            violation, keeps the store directory and exits 1.
            """)

    @OptionGroup var length: RunLength

    @Option(
        help:
            "Work directory (the store lives in <dir>/store). Default: a new directory under /dev/shm if present, else the temporary directory."
    )
    var dir: String?

    @Option(help: "The most workload steps a worker runs before exiting cleanly.")
    var steps: Int = 300

    @Option(help: "Start a fresh store every this many cycles (bounds the log's size).")
    var cyclesPerStore: Int = 25

    @Option(help: "Seconds without a line from a worker before it counts as hung (a violation).")
    var hangTimeout: Double = 60

    @Flag(help: "Keep the work directory even when every check passed.")
    var keep = false

    @Flag(help: "Print one line per cycle.")
    var verbose = false

    func run() throws {
        StopSignal.install()
        let seed = length.seed ?? UInt64.random(in: 0...UInt64.max)
        let base: String
        if let dir {
            base = dir
        } else {
            let root = FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
            base = (root as NSString).appendingPathComponent("logstore-crashtest-\(getpid())-\(seed)")
        }
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        let limit = length.cycleLimit()
        let deadline = length.seconds.map { Date().addingTimeInterval($0) }
        print("logstore-crashtest kill: seed \(seed), work directory \(base)\(CrashTestSettings.encrypted ? ", encrypted stores" : "")")
        let driver = KillDriver(
            seed: seed, base: base, steps: steps, cyclesPerStore: cyclesPerStore,
            hangTimeout: hangTimeout, verbose: verbose)
        let ok = driver.run(cycles: limit, deadline: deadline)
        print(driver.summary())
        if ok {
            if !keep { try? FileManager.default.removeItem(atPath: base) }
            return
        }
        print("FAILED (seed \(seed)). Rerun: logstore-crashtest kill --seed \(seed) --cycles \(driver.cycle + 1)")
        print(
            "The store is kept for inspection: \(driver.storeDir) (as the killed worker left it: \(driver.evidenceDir); as the worker found it: \(driver.startDir))"
        )
        if let w = driver.lastWorkerArguments {
            print("Replay the worker's workload (not its kill) on a copy of the store it started from:")
            print(
                "  cp -r \(driver.startDir) /tmp/replay && \(driver.executable) \(w.map { $0 == driver.storeDir ? "/tmp/replay" : $0 }.joined(separator: " "))"
            )
        }
        throw ExitCode(1)
    }
}

/// The kill -9 driver's loop and statistics. Use from one thread.
final class KillDriver {
    /// How a cycle picks the moment of the kill.
    enum Plan: CustomStringConvertible {
        /// This long after the spawn (open/recovery, or early steps).
        case afterDelay(TimeInterval)
        /// After the worker announced its n-th commit, plus a delay in microseconds.
        case afterBegin(Int, micros: UInt32)
        /// After the worker announced its n-th merge, plus a delay in microseconds.
        case afterMergeBegin(Int, micros: UInt32)
        /// After the worker announced its n-th step of the named kind, plus a delay.
        case afterStep(String, Int, micros: UInt32)

        var description: String {
            switch self {
            case .afterDelay(let t): return String(format: "kill %.1f ms after spawn", t * 1000)
            case .afterBegin(let n, let us): return "kill \(us) us after commit #\(n) began"
            case .afterMergeBegin(let n, let us): return "kill \(us) us after merge #\(n) began"
            case .afterStep(let s, let n, let us): return "kill \(us) us after \(s) #\(n) began"
            }
        }
    }

    let seed: UInt64
    let base: String
    let storeDir: String
    let evidenceDir: String
    let startDir: String
    /// The arguments of the last worker started.
    var lastWorkerArguments: [String]?
    let stderrPath: String
    let steps: Int
    let cyclesPerStore: Int
    let hangTimeout: Double
    let verbose: Bool
    let executable: String
    /// The driver checks with background compaction and checkpoints off, so that no temporary
    /// file it finds after setup() can be one that background work just started writing.
    let options = {
        var o = DataStorePowerLossConfiguration(seed: 0, cycles: 0).options
        o.encryption = CrashTestSettings.encryption
        return o
    }()
    let workload = CrashTestSettings.workload

    var rng: SplitMix64
    var oracle = CrashOracle()
    var cycle = 0

    // Statistics.
    var cyclesCompleted = 0
    var storesStarted = 0
    var killsByPhase: [String: Int] = [:]
    var cleanExits = 0
    var slowDiskCycles = 0
    var acknowledgedByKind: [String: Int] = [:]
    var inFlightSurvived = 0
    var inFlightLost = 0
    var violations: [String] = []
    /// Seconds spent: worker spawn to ready, worker ready to death, recovery and check here.
    var timeToReady = 0.0, timeRunning = 0.0, timeChecking = 0.0
    var openSeconds = 0.05
    var runSeconds = 0.3
    let started = Date()
    var lastProgress = Date()

    init(seed: UInt64, base: String, steps: Int, cyclesPerStore: Int, hangTimeout: Double, verbose: Bool) {
        self.seed = seed
        self.base = base
        storeDir = (base as NSString).appendingPathComponent("store")
        evidenceDir = (base as NSString).appendingPathComponent("store.as-killed")
        startDir = (base as NSString).appendingPathComponent("store.before-worker")
        stderrPath = (base as NSString).appendingPathComponent("worker-stderr.txt")
        self.steps = steps
        self.cyclesPerStore = max(1, cyclesPerStore)
        self.hangTimeout = hangTimeout
        self.verbose = verbose
        rng = SplitMix64(seed: seed)
        executable = Bundle.main.executablePath ?? CommandLine.arguments[0]
    }

    /// Runs cycles until `cycles`, `deadline` or the first violation. Returns whether all passed.
    func run(cycles: Int, deadline: Date?) -> Bool {
        while cycle < cycles {
            if let deadline, Date() >= deadline { break }
            if StopSignal.requested {
                print("stopping: signal received")
                break
            }
            if cycle % cyclesPerStore == 0 {
                try? FileManager.default.removeItem(atPath: storeDir)
                oracle = CrashOracle()
                storesStarted += 1
            }
            do {
                try runCycle()
            } catch {
                violations.append("cycle \(cycle): \(error)")
                return false
            }
            cyclesCompleted += 1
            cycle += 1
            if Date().timeIntervalSince(lastProgress) >= 60 {
                lastProgress = Date()
                print(
                    "  ... \(cyclesCompleted) cycles, \(acknowledgedByKind.values.reduce(0, +)) transactions acknowledged, \(Int(Date().timeIntervalSince(started))) s"
                )
                fflush(nil)
            }
        }
        return true
    }

    func choosePlan() -> Plan {
        let x = rng.int(in: 0..<100)
        // Half the kills land within 300 us of the announcement (inside the commit), half up to
        // 5 ms later (after it, or inside a slow one).
        let us = UInt32(rng.chance(0.5) ? rng.int(in: 0...300) : rng.int(in: 300...5_000))
        switch x {
        case 0..<15: return .afterDelay(Double.random(in: 0...(openSeconds * 1.5), using: &rng))
        case 15..<45: return .afterBegin(rng.int(in: 1...30), micros: us)
        case 45..<65: return .afterMergeBegin(rng.int(in: 1...3), micros: us)
        case 65..<75: return .afterStep("reopen", rng.int(in: 1...2), micros: us)
        case 75..<80: return .afterStep("compact", rng.int(in: 1...2), micros: us)
        case 80..<85: return .afterStep("recompress", 1, micros: us)
        case 85..<88: return .afterStep("childWrite", rng.int(in: 1...6), micros: us)
        case 88..<92: return .afterStep("migrate", 1, micros: us)
        default: return .afterDelay(Double.random(in: 0...min(runSeconds, 0.5), using: &rng))
        }
    }

    /// The phase a worker was in, from the last line it wrote.
    static func phase(afterLine line: String?) -> String {
        guard let line else { return "spawn (before any output)" }
        let parts = line.split(separator: " ")
        switch parts.first {
        case "opening": return "open/recovery"
        case "ready", "ack": return "between steps"
        case "begin": return parts.count > 2 ? "commit (\(parts[2]))" : "commit"
        case "step": return parts.count > 1 ? "step \(parts[1])" : "step"
        default: return "after \(parts.first ?? "?")"
        }
    }

    func runCycle() throws {
        let k0 = oracle.lastAcknowledged
        let model = DataStoreCrashModel(parent: oracle.acknowledgedState, lastTransaction: k0)
        let workerSeed = rng.next()
        let plan = choosePlan()
        // Half the workers run on a slow disk, so kills land between the I/O operations of a commit.
        let ioDelay = rng.chance(0.5) ? 0 : rng.int(in: 100...3_000)
        if ioDelay > 0 { slowDiskCycles += 1 }
        // Keep the store as the worker finds it, to replay its workload after a failure.
        try? FileManager.default.removeItem(atPath: startDir)
        if FileManager.default.fileExists(atPath: storeDir) { try? FileManager.default.copyItem(atPath: storeDir, toPath: startDir) }
        let arguments = [
            "worker", "--dir", storeDir, "--seed", "\(workerSeed)", "--expect-transaction", "\(k0)",
            "--expect-digest", DataStoreCrashTypes.digest(oracle.acknowledgedState), "--steps", "\(steps)",
            "--io-delay-us", "\(ioDelay)",
        ]
        lastWorkerArguments = arguments
        let child = try ChildProcess(executable: executable, arguments: arguments, stderrPath: stderrPath)
        let context =
            "worker seed \(workerSeed) (\(plan)\(ioDelay > 0 ? ", I/O delays up to \(ioDelay) us" : "")), store at transaction \(k0)"

        var lastLine: String?
        var begins: [UInt64: String] = [:]
        var lastBegin = k0
        var lastAck = k0
        var beginCount = 0
        var mergeCount = 0
        var stepCounts: [String: Int] = [:]
        var failureLine: String?
        var killed = false
        var readyAt: Date?

        func consume(_ line: String) throws {
            lastLine = line
            let parts = line.split(separator: " ", maxSplits: 2).map(String.init)
            switch parts.first {
            case "begin":
                guard parts.count == 3, let n = UInt64(parts[1]) else { throw CrashTestError("\(context): malformed line \"\(line)\"") }
                begins[n] = parts[2]
                lastBegin = n
                beginCount += 1
                if parts[2] == "merge" { mergeCount += 1 }
            case "ack":
                guard parts.count == 2, let n = UInt64(parts[1]), n == lastBegin else {
                    throw CrashTestError("\(context): ack out of order: \"\(line)\" after begin \(lastBegin)")
                }
                lastAck = n
                acknowledgedByKind[begins[n] ?? "?", default: 0] += 1
            case "step":
                if parts.count > 1 { stepCounts[parts[1], default: 0] += 1 }
            case "ready":
                if readyAt == nil { readyAt = Date() }
            case "violation", "error":
                failureLine = line
            default: break
            }
        }

        func shouldKill() -> UInt32? {
            switch plan {
            case .afterDelay: return nil
            case .afterBegin(let n, let us): return beginCount >= n ? us : nil
            case .afterMergeBegin(let n, let us): return mergeCount >= n ? us : nil
            case .afterStep(let s, let n, let us): return (stepCounts[s] ?? 0) >= n ? us : nil
            }
        }

        var lastOutput = Date()
        loop: while true {
            var wait = hangTimeout - Date().timeIntervalSince(lastOutput)
            if case .afterDelay(let t) = plan { wait = min(wait, t - Date().timeIntervalSince(child.started)) }
            if let line = child.readLine(timeout: max(0, wait)) {
                lastOutput = Date()
                try consume(line)
                if let us = shouldKill() {
                    if us > 0 { usleep(us) }
                    child.kill()
                    killed = true
                    break loop
                }
                continue
            }
            if child.eof { break }
            if case .afterDelay(let t) = plan, Date().timeIntervalSince(child.started) >= t {
                child.kill()
                killed = true
                break
            }
            if Date().timeIntervalSince(lastOutput) >= hangTimeout {
                child.kill()
                child.wait()
                throw CrashTestError(
                    "\(context): the worker wrote nothing for \(Int(hangTimeout)) s (hang); last line: \(lastLine ?? "none")")
            }
        }
        // Everything the worker wrote before it died counts (acks included).
        while let line = child.readLine(timeout: 10) { try consume(line) }
        let exit = child.wait()
        let died = Date()
        timeToReady += (readyAt ?? died).timeIntervalSince(child.started)
        timeRunning += died.timeIntervalSince(readyAt ?? died)
        defer { timeChecking += Date().timeIntervalSince(died) }
        if !child.eof { throw CrashTestError("\(context): the worker's stdout did not close after it died") }
        if let readyAt { openSeconds = 0.8 * openSeconds + 0.2 * readyAt.timeIntervalSince(child.started) }

        let phase: String
        switch exit {
        case .signaled(SIGKILL) where killed:
            phase = Self.phase(afterLine: lastLine)
            killsByPhase[phase, default: 0] += 1
        case .exited(0) where lastLine == "done":
            phase = "clean exit"
            cleanExits += 1
            runSeconds = 0.8 * runSeconds + 0.2 * Date().timeIntervalSince(child.started)
        default:
            throw CrashTestError(
                "\(context): the worker ended with \(exit): \(failureLine ?? "last line: \(lastLine ?? "none")") (stderr: \(stderrPath))")
        }

        // Learn what the worker's transactions wrote by replaying its steps.
        let replayed = workload.replay(seed: workerSeed, from: model, maxSteps: steps, throughTransaction: lastBegin, oracle: &oracle)
        guard oracle.lastAttempted == lastBegin else {
            throw CrashTestError(
                "\(context): the replay of the worker's steps reaches transaction \(oracle.lastAttempted), the worker began \(lastBegin) (driver and worker disagree on the workload)"
            )
        }
        for t in replayed where begins[t.number] != nil && begins[t.number] != t.kind.rawValue {
            throw CrashTestError(
                "\(context): transaction \(t.number) was a \(begins[t.number] ?? "?") in the worker, a \(t.kind.rawValue) in the replay")
        }
        oracle.acknowledge(lastAck)

        // Keep the store as the worker left it, for a failure report.
        try? FileManager.default.removeItem(atPath: evidenceDir)
        try? FileManager.default.copyItem(atPath: storeDir, toPath: evidenceDir)

        // Recover in this process and check.
        let store = LogDataStore(directory: URL(fileURLWithPath: storeDir), options: options)
        // The worker's migrations are registered only by the step that runs each.
        store.migrations.allowsUnknownMigrations = true
        do {
            try store.setup()
        } catch {
            throw CrashTestError("\(context), killed during \(phase): setup() failed: \(error)")
        }
        defer { try? store.tearDown() }
        let k: UInt64
        do {
            k = try oracle.check(DataStoreCrashTypes.observe(store))
        } catch {
            throw CrashTestError("\(context), killed during \(phase) (acknowledged \(lastAck), began \(lastBegin)): \(error)")
        }
        // (The open may write a new preallocation spare itself: a recovered tail written up to
        // the segment size.)
        let leftovers = ((try? FileManager.default.contentsOfDirectory(atPath: storeDir)) ?? []).filter {
            $0.hasSuffix(".tmp") && $0 != Preallocator.spareName
        }
        if !leftovers.isEmpty {
            throw CrashTestError(
                "\(context), killed during \(phase): after setup() the store directory still holds \(leftovers.joined(separator: ", "))")
        }
        inFlightSurvived += Int(k - lastAck)
        inFlightLost += Int(lastBegin - k)
        oracle.adoptRecovered(k)
        try store.tearDown()
        if verbose {
            print("cycle \(cycle): \(phase); acknowledged \(lastAck), began \(lastBegin), recovered \(k); \(plan)")
        }
    }

    func summary() -> String {
        let seconds = Date().timeIntervalSince(started)
        func list(_ d: [String: Int]) -> String { d.keys.sorted().map { "\($0) \(d[$0] ?? 0)" }.joined(separator: ", ") }
        var s =
            "kill -9 run, seed \(seed): \(cyclesCompleted) cycles in \(String(format: "%.1f", seconds)) s (\(Int(Double(cyclesCompleted) / max(seconds, 0.001) * 60)) cycles/minute), \(storesStarted) fresh stores, \(slowDiskCycles) cycles with a slow disk\n"
        s += "  workers killed: \(killsByPhase.values.reduce(0, +)) (by phase: \(list(killsByPhase))); exited cleanly: \(cleanExits)\n"
        s +=
            "  transactions acknowledged: \(acknowledgedByKind.values.reduce(0, +)) (\(list(acknowledgedByKind))); in flight at the kill: survived \(inFlightSurvived), lost \(inFlightLost)\n"
        let n = Double(max(1, cyclesCompleted))
        s += String(
            format: "  mean per cycle: worker start and open %.1f ms, worker steps %.1f ms, recovery and check %.1f ms\n",
            timeToReady / n * 1000, timeRunning / n * 1000, timeChecking / n * 1000)
        s += "  violations: \(violations.count)"
        for v in violations { s += "\n  VIOLATION: \(v)" }
        return s
    }
}
