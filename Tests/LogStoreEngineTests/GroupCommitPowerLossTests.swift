import Foundation
import Synchronization
import XCTest
import _LogStoreTestSupport

@testable import LogStoreEngine

/// 16 writer threads sharing group commits on a `FaultInjectingFileSystem`, crashed at a
/// random I/O operation, then a simulated power loss (unsynced writes dropped, torn, kept, or their
/// sectors written back out of order in a quarter of the files) or a process crash. Several
/// commits are appended but unsynced at the crash, so a later one can survive an earlier one's
/// damage. After every crash the store must open by itself (strict), with every acknowledged
/// commit of every writer and at most the one in flight more (``GroupCommitWorkload/check``).
///
/// Thread timing makes a run approximate to reproduce. `LOGSTORE_GROUP_POWERLOSS_CYCLES` sets the
/// cycles (default 150; Docs/Testing.md records a soak), `LOGSTORE_GROUP_POWERLOSS_SEED` the seed.
final class GroupCommitPowerLossTests: XCTestCase {
    func testSixteenWritersSharingGroupCommitsSurviveSimulatedPowerLoss() throws {
        let env = ProcessInfo.processInfo.environment
        let cycles = env["LOGSTORE_GROUP_POWERLOSS_CYCLES"].flatMap(Int.init) ?? 150
        let seed = env["LOGSTORE_GROUP_POWERLOSS_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        let writers = 16
        var rng = SplitMix64(seed: seed)
        var model = PowerLossModel()
        model.sectorReorderingProbability = 0.25
        var options = GroupCommitWorkload.options()
        options.autoCompaction = false
        options.checkpointInterval = 0
        let dir = "/store"
        var fs = FaultInjectingFileSystem()
        var durable = [Int](repeating: 0, count: writers)
        var acknowledgedTotal = 0
        var powerLosses = 0
        for cycle in 0..<cycles {
            let what = "cycle \(cycle) (seed \(seed))"
            if cycle % 15 == 0 {
                fs = FaultInjectingFileSystem()
                durable = [Int](repeating: 0, count: writers)
            }
            let engine = try LogEngine.open(directory: dir, fileSystem: fs, options: options)
            fs.scheduleCrash(afterMutatingOperations: rng.int(in: 5...150))
            let acked = Mutex([Int](repeating: -1, count: writers))
            let start = durable
            DispatchQueue.concurrentPerform(iterations: writers) { w in
                for n in start[w]..<(start[w] + 40) {
                    do {
                        try engine.commit(GroupCommitWorkload.operations(w, n))
                    } catch {
                        return
                    }
                    acked.withLock { $0[w] = n }
                }
            }
            if !fs.isCrashed { fs.crash() }
            try? engine.close()
            let acknowledged = acked.withLock { $0 }
            acknowledgedTotal += acknowledged.enumerated().reduce(0) { $0 + max(0, $1.element + 1 - start[$1.offset]) }
            let powerLoss = rng.chance(0.8)
            if powerLoss { powerLosses += 1 }
            fs = powerLoss ? fs.powerLossImage(seed: rng.next(), model: model) : fs.processCrashImage()
            let recovered: LogEngine
            do {
                recovered = try LogEngine.open(directory: dir, fileSystem: fs, options: options)
            } catch {
                return XCTFail("\(what): the store does not open by itself after a \(powerLoss ? "power loss" : "process crash"): \(error)")
            }
            do {
                durable = try GroupCommitWorkload.check(
                    try recovered.snapshot(), writers: writers, acknowledged: acknowledged, durable: durable)
            } catch {
                try? recovered.close()
                return XCTFail("\(what): \(error)")
            }
            try recovered.close()
        }
        print(
            "group commit under simulated power loss: \(cycles) cycles (seed \(seed)), \(writers) writers, \(acknowledgedTotal) commits acknowledged, \(powerLosses) power losses; 0 violations"
        )
    }
}
