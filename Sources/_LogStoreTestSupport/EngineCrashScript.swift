public import LogStoreEngine

// Crash scripts: the engine on a FaultInjectingFileSystem, driven step by step by a script
// (fuzzer bytes or a property test), with crashes after a chosen number of mutating I/O
// operations and a CrashOracle check after every recovery. The script-driven twin of
// EnginePowerLossHarness (which draws its steps from a seeded random generator).

/// One change in a crash-script transaction (values are self-checking ``CrashWorkloadValue``s).
public enum EngineCrashMutation: Sendable, Hashable, CustomStringConvertible {
    /// Put item `key` of type `type` (0-2) with a value of `length` payload bytes made from `pattern`.
    case put(type: Int, key: Int, length: Int, pattern: UInt8)
    /// Delete item `key` of type `type`.
    case delete(type: Int, key: Int)
    /// Delete every item of type `type`.
    case deleteAll(type: Int)

    /// Short form, e.g. `put B3 (120 B)`.
    public var description: String {
        switch self {
        case .put(let t, let k, let n, _): return "put \(EngineCrashScript.typeName(t))\(k) (\(n) B)"
        case .delete(let t, let k): return "del \(EngineCrashScript.typeName(t))\(k)"
        case .deleteAll(let t): return "delAll \(EngineCrashScript.typeName(t))"
        }
    }
}

/// One step of a crash script.
public enum EngineCrashScriptOperation: Sendable, Hashable, CustomStringConvertible {
    /// One transaction, through `LogEngine.commit` (`viaCommit`) or a `write` body.
    case transaction(viaCommit: Bool, [EngineCrashMutation])
    /// Close cleanly and reopen; the store must show exactly the acknowledged state.
    case reopen
    /// Arms a crash after `afterMutatingOperations` more mutating I/O operations; when it hits,
    /// the store is recovered from a power-loss image (with `seed`) or a process-crash image.
    case armCrash(afterMutatingOperations: Int, powerLoss: Bool, seed: UInt8)
    /// Crashes now (if not crashed yet) and recovers; with `crashDuringOpen` >= 0 the first
    /// recovery attempt itself crashes after that many mutating operations.
    case crash(powerLoss: Bool, seed: UInt8, crashDuringOpen: Int)

    /// Short form for failure reports.
    public var description: String {
        switch self {
        case .transaction(let c, let m): return "\(c ? "commit" : "write")[\(m.map(\.description).joined(separator: ", "))]"
        case .reopen: return "reopen"
        case .armCrash(let n, let p, let s): return "arm crash after \(n) ops (\(p ? "power loss, seed \(s)" : "process crash"))"
        case .crash(let p, let s, let o):
            return "crash now (\(p ? "power loss, seed \(s)" : "process crash"))" + (o >= 0 ? ", recovery crashes after \(o) ops" : "")
        }
    }
}

/// Parsing crash scripts from bytes.
public enum EngineCrashScript {
    /// "A", "B" or "C".
    public static func typeName(_ t: Int) -> String { ["A", "B", "C"][t % 3] }

    /// Parses a whole script (at most `limit` steps).
    public static func parse(_ bytes: [UInt8], limit: Int = 40) -> [EngineCrashScriptOperation] {
        var r = StoreScript.Reader(bytes)
        var ops: [EngineCrashScriptOperation] = []
        while !r.isAtEnd && ops.count < limit { ops.append(parseOne(&r)) }
        return ops
    }

    /// Parses one step: the first byte picks the kind, the next ones its arguments.
    public static func parseOne(_ r: inout StoreScript.Reader) -> EngineCrashScriptOperation {
        switch r.next() % 12 {
        case 0..<7:
            let viaCommit = r.next() & 1 != 0
            let n = 1 + r.next() % 6
            let mutations: [EngineCrashMutation] = (0..<n).map { _ in
                switch r.next() % 10 {
                case 0..<7:
                    // Lengths: mostly small; a high bit asks for up to ~16 KiB (roll-overs).
                    let l = r.next()
                    let length = l & 0x80 != 0 ? (l & 0x7F) * 128 : l
                    return .put(type: r.next() % 3, key: r.next() % 24, length: length, pattern: UInt8(r.next()))
                case 7..<9: return .delete(type: r.next() % 3, key: r.next() % 24)
                default: return .deleteAll(type: r.next() % 3)
                }
            }
            return .transaction(viaCommit: viaCommit, mutations)
        case 7: return .reopen
        case 8, 9: return .armCrash(afterMutatingOperations: r.next() % 24, powerLoss: r.next() % 4 != 0, seed: UInt8(r.next()))
        default:
            let b = r.next()
            return .crash(powerLoss: b % 4 != 0, seed: UInt8(r.next()), crashDuringOpen: b & 0x10 != 0 ? r.next() % 12 : -1)
        }
    }
}

/// Runs crash scripts against a ``LogEngine`` on a ``FaultInjectingFileSystem``, checking every
/// recovered state with a ``CrashOracle``. Use from one thread.
public final class EngineCrashScriptChecker {
    let directory = "/data/store"
    let options: LogEngineOptions
    var fs = FaultInjectingFileSystem()
    var oracle = CrashOracle()
    var interp: EngineCrashInterpreter
    /// The image a crash armed by `armCrash` turns into: power loss (with seed) or process crash.
    var armedImage: (powerLoss: Bool, seed: UInt8)? = nil
    var steps: [String] = []

    /// A checker with a new store (opened). Throws what `LogEngine.open` throws.
    public init(options: LogEngineOptions) throws {
        self.options = options
        try fs.createDirectory(atPath: "/data")
        try fs.syncDirectory(atPath: "/")
        interp = EngineCrashInterpreter(directory: directory, fileSystem: fs, options: options)
        try interp.open()
    }

    /// Closes the engine, ignoring errors.
    public func finish() { interp.abandon() }

    /// Runs every step. Throws ``ModelViolation`` (with the steps so far) when the store breaks a
    /// crash-consistency promise or fails without a crash.
    public func run(_ operations: [EngineCrashScriptOperation]) throws {
        for op in operations {
            steps.append(op.description)
            do {
                try step(op)
            } catch let v as ModelViolation {
                throw ModelViolation(v.message, steps: steps)
            } catch {
                throw ModelViolation("\(error)", steps: steps)
            }
        }
    }

    func step(_ op: EngineCrashScriptOperation) throws {
        switch op {
        case .transaction(let viaCommit, let mutations):
            let ops = operations(mutations, number: oracle.lastAttempted + 1)
            try runOrRecover(viaCommit ? .commit(ops) : .write(ops))
        case .reopen:
            try runOrRecover(.reopen)
        case .armCrash(let n, let powerLoss, let seed):
            fs.scheduleCrash(afterMutatingOperations: n)
            armedImage = (powerLoss, seed)
        case .crash(let powerLoss, let seed, let crashDuringOpen):
            fs.crash()
            try recover(powerLoss: powerLoss, seed: seed, crashDuringOpen: crashDuringOpen)
        }
    }

    /// Runs an interpreter step; if the file system crashed under it, recovers and checks.
    func runOrRecover(_ s: CrashWorkloadStep) throws {
        do {
            try interp.run(s, oracle: &oracle)
        } catch let v as CrashOracleViolation {
            throw ModelViolation(v.message)
        } catch {
            guard fs.isCrashed else { throw ModelViolation("\(s.summary) failed without a crash: \(error)") }
            let image = armedImage ?? (false, 0)
            try recover(powerLoss: image.powerLoss, seed: image.seed, crashDuringOpen: -1)
        }
    }

    /// Replaces the file system by a crash image, reopens (maybe crashing inside recovery
    /// first), and checks the recovered state with the oracle.
    func recover(powerLoss: Bool, seed: UInt8, crashDuringOpen: Int) throws {
        interp.abandon()
        armedImage = nil
        fs = powerLoss ? fs.powerLossImage(seed: UInt64(seed)) : fs.processCrashImage()
        if crashDuringOpen >= 0 {
            fs.scheduleCrash(afterMutatingOperations: crashDuringOpen)
            let attempt = EngineCrashInterpreter(directory: directory, fileSystem: fs, options: options)
            do {
                try attempt.open()
                fs.cancelScheduledCrash()
                interp = attempt
                return try check()
            } catch {
                guard fs.isCrashed else { throw ModelViolation("open after a crash failed: \(error)") }
                attempt.abandon()
                fs = fs.processCrashImage()
            }
        }
        interp = EngineCrashInterpreter(directory: directory, fileSystem: fs, options: options)
        do {
            try interp.open()
        } catch {
            throw ModelViolation("open after a crash failed: \(error)")
        }
        try check()
    }

    func check() throws {
        guard let engine = interp.engine else { throw ModelViolation("no open engine after recovery") }
        let k: UInt64
        do {
            k = try oracle.check(interp.observe())
        } catch let v as CrashOracleViolation {
            throw ModelViolation("after recovery: \(v.message)")
        }
        let seq = try engine.snapshot().sequence
        guard seq == k, engine.recoveryReport.lastSequence == k else {
            throw ModelViolation(
                "the store shows transactions 1...\(k) but its sequence is \(seq) (recovery report: \(engine.recoveryReport.lastSequence))")
        }
        oracle.adoptRecovered(k)
    }

    /// The transaction's record operations plus its marker record (see ``CrashOracle``).
    func operations(_ mutations: [EngineCrashMutation], number: UInt64) -> [RecordOperation] {
        var ops: [RecordOperation] = []
        for m in mutations {
            switch m {
            case .put(let t, let k, let length, let pattern):
                let type = EngineCrashScript.typeName(t)
                let key = CrashWorkloadGenerator.itemKey(k)
                let payload = (0..<length).map { UInt8(truncatingIfNeeded: Int(pattern) &+ ($0 % (Int(pattern % 7) + 1))) }
                ops.append(
                    .put(type: type, key: key, value: CrashWorkloadValue.encode(txn: number, type: type, key: key, payload: payload)))
            case .delete(let t, let k):
                ops.append(.delete(type: EngineCrashScript.typeName(t), key: CrashWorkloadGenerator.itemKey(k)))
            case .deleteAll(let t):
                ops.append(.deleteAll(type: EngineCrashScript.typeName(t)))
            }
        }
        let markerKey = CrashWorkloadValue.markerKey(number)
        ops.append(
            .put(
                type: CrashWorkloadValue.markerType, key: markerKey,
                value: CrashWorkloadValue.encode(
                    txn: number, type: CrashWorkloadValue.markerType, key: markerKey, payload: [UInt8(truncatingIfNeeded: ops.count)])))
        return ops
    }
}
