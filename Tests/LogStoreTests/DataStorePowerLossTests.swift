import Foundation
import LogStore
import LogStoreEngine
import XCTest
import _LogStoreTestSupport

/// Simulated power losses and process crashes under `LogDataStore` (Docs/Testing.md, "Crash
/// recovery"): single- and multi-item transactions, async writes, deletes, delete-alls, child
/// stores merged as one transaction, reopens, migrations applied by setup(), crashes at every kind
/// of I/O.
///
/// `LOGSTORE_DATASTORE_POWERLOSS_CYCLES` sets the number of crash cycles (default 500; half as
/// many with background compaction) and
/// `LOGSTORE_DATASTORE_POWERLOSS_SEED` the seed (default: random, printed) for soak runs;
/// `logstore-crashtest powerloss` runs the same harness in a release build.
final class DataStorePowerLossTests: XCTestCase {
    func testAcknowledgedDataStoreTransactionsSurviveSimulatedPowerLoss() {
        let env = ProcessInfo.processInfo.environment
        let cycles = env["LOGSTORE_DATASTORE_POWERLOSS_CYCLES"].flatMap { Int($0) } ?? 500
        let seed = env["LOGSTORE_DATASTORE_POWERLOSS_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max)
        let start = Date()
        let report = DataStorePowerLossHarness(DataStorePowerLossConfiguration(seed: seed, cycles: cycles)).run()
        let seconds = Date().timeIntervalSince(start)
        print(
            "\(report)\n\(String(format: "%.1f", seconds)) s, \(Int(Double(report.cyclesCompleted) / max(seconds, 0.001) * 60)) cycles/minute"
        )
        if let failure = report.failure {
            XCTFail("DataStore power-loss harness failed (rerun with LOGSTORE_DATASTORE_POWERLOSS_SEED=\(seed)):\n\(failure)")
        }
        XCTAssertEqual(report.cyclesCompleted, cycles, "seed \(seed)")
        // The mix reaches every kind of step (it completes or a crash stops it).
        for step in [
            "write", "writeAsync", "abortedWrite", "makeChild", "childWrite", "merge", "discardChild", "verify", "reopen", "compact",
            "migrate",
        ]
        where cycles >= 300 {
            XCTAssertGreaterThan((report.steps[step] ?? 0) + (report.crashesDuring[step] ?? 0), 0, "no \(step) steps, seed \(seed)")
        }
        // Migrations applied by setup() both complete (a quarter of the cycles aimed at one let it
        // finish) and are crashed in: the store is then before or after them.
        if cycles >= 300 {
            XCTAssertGreaterThan(report.steps["migrate"] ?? 0, 0, "no completed migration, seed \(seed)")
            XCTAssertGreaterThan(report.crashesDuring["migrate"] ?? 0, 0, "no crash during a migration, seed \(seed)")
        }
    }

    /// `.none` and `.buffered` durability: only flushed commits are promised (the interpreter
    /// flushes after every third), so each crash finds a batch of unsynced transactions whose
    /// sectors may reach the disk out of order (a quarter of the files); after every crash the
    /// store must open by itself (format v2) with every flushed transaction.
    func testFlushedTransactionsSurviveSimulatedPowerLossWithoutSynchronousDurability() {
        let env = ProcessInfo.processInfo.environment
        for durability in [Durability.none, .buffered] {
            let cycles = (env["LOGSTORE_DATASTORE_POWERLOSS_CYCLES"].flatMap { Int($0) } ?? 500) / 2
            let seed = env["LOGSTORE_DATASTORE_POWERLOSS_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max)
            var c = DataStorePowerLossConfiguration(seed: seed, cycles: cycles)
            c.options.durability = durability
            let report = DataStorePowerLossHarness(c).run()
            print("\(durability): \(report)")
            if let failure = report.failure {
                XCTFail(
                    "DataStore power-loss harness (\(durability)) failed (rerun with LOGSTORE_DATASTORE_POWERLOSS_SEED=\(seed)):\n\(failure)"
                )
            }
            XCTAssertEqual(report.cyclesCompleted, cycles, "\(durability), seed \(seed)")
        }
    }

    func testAcknowledgedTransactionsSurviveSimulatedPowerLossWithBackgroundCompaction() {
        let env = ProcessInfo.processInfo.environment
        let cycles = (env["LOGSTORE_DATASTORE_POWERLOSS_CYCLES"].flatMap { Int($0) } ?? 500) / 2
        let seed = env["LOGSTORE_DATASTORE_POWERLOSS_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max)
        var c = DataStorePowerLossConfiguration(seed: seed, cycles: cycles)
        c.backgroundMaintenance = true
        let report = DataStorePowerLossHarness(c).run()
        print(report)
        if let failure = report.failure {
            XCTFail(
                "DataStore power-loss harness with background compaction failed (seed \(seed); background work makes a rerun approximate):\n\(failure)"
            )
        }
        XCTAssertEqual(report.cyclesCompleted, cycles, "seed \(seed)")
    }

    // MARK: Merges

    let directory = "/data/store"

    /// The harness's options; `preallocate` false gives the store a growing tail.
    var preallocate = true

    func options() -> LogStoreOptions {
        var o = DataStorePowerLossConfiguration(seed: 0, cycles: 0).options
        if !preallocate { o.preallocationSize = 0 }
        // The merges below are sized (with values compressed as they commit) to roll the tail
        // over inside the merge's commit.
        o.compressOnWrite = true
        return o
    }

    func freshFileSystem() throws -> FaultInjectingFileSystem {
        let fs = FaultInjectingFileSystem()
        try fs.createDirectory(atPath: "/data")
        try fs.syncDirectory(atPath: "/")
        return fs
    }

    func interpreter(_ fs: FaultInjectingFileSystem, _ model: DataStoreCrashModel = DataStoreCrashModel()) -> DataStoreCrashInterpreter {
        let dir = directory
        let o = options()
        return DataStoreCrashInterpreter(model: model) { LogDataStore(path: dir, fileSystem: fs, options: o) }
    }

    /// Sets the store up on `image`, checks it against `oracle` and returns the transaction it shows.
    func recover(_ image: FaultInjectingFileSystem, _ oracle: CrashOracle, _ context: String) throws -> UInt64 {
        let interp = interpreter(image)
        try interp.open()
        defer { try? interp.close() }
        do {
            return try oracle.check(interp.observe())
        } catch {
            XCTFail("\(context): \(error)")
            throw error
        }
    }

    func testInterruptedMergeIsAllOrNothingAtEveryIOPoint() throws {
        // Without and with a segment roll-over inside the merge's commit, on a preallocated and on
        // a growing tail.
        for (preallocate, rollOver) in [(true, false), (true, true), (false, false), (false, true)] {
            self.preallocate = preallocate
            var crashPoints = 0
            var sawMergedAfterCrash = false
            var sawLostAfterCrash = false
            for crashAt in 0..<200 {
                let (fs, interp, before, oracle) = try prepareMerge(rollOver: rollOver)
                var o = oracle
                fs.scheduleCrash(afterMutatingOperations: crashAt)
                do {
                    try interp.run(.merge, oracle: &o)
                    fs.cancelScheduledCrash()
                    // The merge completed before the crash point: every I/O point has been tried.
                    XCTAssertEqual(o.lastAcknowledged, before + 1)
                    XCTAssertEqual(try recover(fs.powerLossImage(seed: 1), o, "after a completed merge"), before + 1)
                    break
                } catch {
                    guard fs.isCrashed else { throw error }
                }
                crashPoints += 1
                interp.abandon()
                var images = [("process crash", fs.processCrashImage())]
                for seed in 0..<2 as Range<UInt64> { images.append(("power loss \(seed)", fs.powerLossImage(seed: seed))) }
                for (name, image) in images {
                    let k = try recover(image, o, "roll-over \(rollOver), crash at I/O \(crashAt) of the merge, \(name)")
                    if k == before + 1 { sawMergedAfterCrash = true } else { sawLostAfterCrash = true }
                }
            }
            // Append + fdatasync; a roll-over adds the seal, the new segment and the manifest switch.
            XCTAssertGreaterThanOrEqual(crashPoints, rollOver ? 8 : 2, "roll-over \(rollOver), preallocate \(preallocate)")
            XCTAssertTrue(sawLostAfterCrash, "roll-over \(rollOver)")
            XCTAssertTrue(
                sawMergedAfterCrash,
                "roll-over \(rollOver): an unacknowledged merge whose append reached the disk should survive some images")
        }
    }

    /// A store with a few transactions and a child with spilled writes (and a parent write after
    /// the child's base), ready to merge; with `rollOver`, the tail segment is nearly full.
    func prepareMerge(rollOver: Bool) throws -> (FaultInjectingFileSystem, DataStoreCrashInterpreter, UInt64, CrashOracle) {
        let fs = try freshFileSystem()
        let interp = interpreter(fs)
        var oracle = CrashOracle()
        var rng = SplitMix64(seed: 42)
        let gen = DataStoreCrashWorkloadGenerator()
        try interp.open()
        func parentWrite(_ ops: [RecordOperation]) throws { try interp.run(.write(ops), oracle: &oracle) }
        for _ in 0..<4 {
            try parentWrite(gen.transactions.transaction(number: interp.model.lastTransaction + 1, state: interp.model.parent, rng: &rng))
        }
        if rollOver {
            // Incompressible 6 KB values until the tail segment is past 56 KiB.
            var i = 100
            while try segmentBytes(fs) < 56 << 10 {
                let n = interp.model.lastTransaction + 1
                let key = CrashWorkloadGenerator.itemKey(i)
                let marker = CrashWorkloadValue.markerKey(n)
                try parentWrite([
                    .put(type: "C", key: key, value: CrashWorkloadValue.encode(txn: n, type: "C", key: key, payload: rng.bytes(6_000))),
                    .put(type: "txn", key: marker, value: CrashWorkloadValue.encode(txn: n, type: "txn", key: marker, payload: [])),
                ])
                i += 1
            }
        }
        try interp.run(.makeChild, oracle: &oracle)
        for _ in 0..<6 {
            let ops = gen.transactions.transaction(
                number: interp.model.lastTransaction + 1, state: interp.model.child?.state ?? [:], rng: &rng)
            try interp.run(.childWrite(ops.filter { if case .put("txn", _, _) = $0 { false } else { true } }), oracle: &oracle)
        }
        try parentWrite(gen.transactions.transaction(number: interp.model.lastTransaction + 1, state: interp.model.parent, rng: &rng))
        XCTAssertTrue(try fs.contentsOfDirectory(atPath: directory).contains { $0.hasPrefix("child-") }, "the child should have spilled")
        return (fs, interp, oracle.lastAcknowledged, oracle)
    }

    /// Bytes in the newest segment file.
    func segmentBytes(_ fs: FaultInjectingFileSystem) throws -> Int {
        guard let last = try fs.contentsOfDirectory(atPath: directory).filter({ $0.hasSuffix(".log") }).max() else { return 0 }
        let f = try fs.open(directory + "/" + last, mode: .readOnly)
        defer { try? f.close() }
        // Where the log ends: before the zeros of a preallocated tail.
        let bytes = try f.read(at: 0, count: Int(try f.size()))
        return (bytes.lastIndex { $0 != 0 } ?? -1) + 1
    }

    // MARK: Regressions

    /// A commit killed during its fdatasync is recovered (its append is in the OS cache) and
    /// shown, so recovery must make it durable, or a power loss after the restart takes it back
    /// (the DataStore harness's seed 13717354105200002446 reaches this).
    func testCommitRecoveredAfterAKillDuringItsSyncSurvivesALaterPowerLoss() throws {
        for viaMerge in [false, true] {
            let fs = try freshFileSystem()
            let interp = interpreter(fs)
            var oracle = CrashOracle()
            var rng = SplitMix64(seed: 11)
            let gen = DataStoreCrashWorkloadGenerator()
            try interp.open()
            try interp.run(.write(gen.transactions.transaction(number: 1, state: [:], rng: &rng)), oracle: &oracle)
            let step: DataStoreCrashStep
            if viaMerge {
                try interp.run(.makeChild, oracle: &oracle)
                try interp.run(
                    .childWrite(
                        gen.transactions.transaction(number: 2, state: interp.model.parent, rng: &rng).filter {
                            if case .put("txn", _, _) = $0 { false } else { true }
                        }), oracle: &oracle)
                step = .merge
            } else {
                step = .write(gen.transactions.transaction(number: 2, state: interp.model.parent, rng: &rng))
            }
            // The append happens; the fdatasync is where the process dies.
            fs.scheduleCrash(afterMutatingOperations: 1)
            XCTAssertThrowsError(try interp.run(step, oracle: &oracle))
            XCTAssertTrue(fs.isCrashed)
            interp.abandon()
            let restarted = fs.processCrashImage()
            let k = try recover(restarted, oracle, "merge \(viaMerge): after the kill")
            XCTAssertEqual(k, 2, "merge \(viaMerge): the appended transaction is in the OS cache and is recovered")
            oracle.adoptRecovered(k)
            // Readers have seen transaction 2: a power loss now must not take it back.
            for seed in 0..<16 as Range<UInt64> {
                XCTAssertEqual(
                    try recover(restarted.powerLossImage(seed: seed), oracle, "merge \(viaMerge): power loss \(seed) after the restart"), 2)
            }
        }
    }

    // MARK: Replay (what the kill -9 driver relies on)

    func testReplayOfAWorkloadRecordsTheTransactionsTheInterpreterCommitted() throws {
        let fs = try freshFileSystem()
        let interp = interpreter(fs)
        try interp.open()
        var committed = CrashOracle()
        var kinds: [DataStoreCrashReplayedTransaction] = []
        var rng = SplitMix64(seed: 7)
        let gen = DataStoreCrashWorkloadGenerator()
        for _ in 0..<200 {
            let step = gen.nextStep(model: interp.model, rng: &rng)
            try interp.run(
                step,
                willCommit: { n, ops, kind in
                    committed.begin(ops)
                    kinds.append(DataStoreCrashReplayedTransaction(number: n, kind: kind))
                }, didCommit: { committed.acknowledge($0) })
        }
        XCTAssertTrue(kinds.contains { $0.kind == .merge } && kinds.contains { $0.kind == .writeAsync })
        var replayed = CrashOracle()
        let found = gen.replay(seed: 7, from: DataStoreCrashModel(), maxSteps: 200, throughTransaction: .max, oracle: &replayed)
        XCTAssertEqual(found, kinds)
        replayed.acknowledge(replayed.lastAttempted)
        XCTAssertEqual(try replayed.check(interp.observe()), interp.model.lastTransaction)
        // A replay that stops at a transaction records exactly up to it.
        var partial = CrashOracle()
        let upTo = gen.replay(seed: 7, from: DataStoreCrashModel(), maxSteps: 200, throughTransaction: 5, oracle: &partial)
        XCTAssertEqual(upTo.map(\.number), [1, 2, 3, 4, 5])
        XCTAssertEqual(partial.lastAttempted, 5)
        try interp.close()
    }

    func testSlowDiskOfTheKillDriverChangesOnlyTiming() throws {
        let slow = DelayingFileSystem(try freshFileSystem(), maxDelayMicroseconds: 20)
        let dir = directory
        let o = options()
        let interp = DataStoreCrashInterpreter(model: DataStoreCrashModel()) { LogDataStore(path: dir, fileSystem: slow, options: o) }
        try interp.open()
        var oracle = CrashOracle()
        var rng = SplitMix64(seed: 3)
        let gen = DataStoreCrashWorkloadGenerator()
        for _ in 0..<40 { try interp.run(gen.nextStep(model: interp.model, rng: &rng), oracle: &oracle) }
        try interp.run(.reopen, oracle: &oracle)
        XCTAssertEqual(try oracle.check(interp.observe()), oracle.lastAcknowledged)
        XCTAssertGreaterThan(oracle.lastAcknowledged, 10)
        try interp.close()
    }

    func testObserveRejectsAStoreWithAnItemTypeTheWorkloadNeverWrote() throws {
        let fs = try freshFileSystem()
        let interp = interpreter(fs)
        try interp.open()
        let store = try XCTUnwrap(interp.store)
        try store.writeSync { try $0.insert(DataStoreCrashRecord<DataStoreCrashKindA>(id: 1, bytes: [1])) }
        // A value without a valid checksum is caught by the oracle, an unknown type by observe.
        var oracle = CrashOracle()
        oracle.begin([])
        XCTAssertThrowsError(try oracle.check(interp.observe()))
        try store.writeSync { try $0.insert(Restaurant(id: "x", name: "x", rating: 1)) }
        XCTAssertThrowsError(try interp.observe()) { XCTAssertTrue($0 is CrashOracleViolation, "\($0)") }
        try interp.close()
    }
}
