import ArgumentParser
import Foundation
import LogStore
import LogStoreEncryption
import LogStoreEngine
import _LogStoreTestSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What the driver and its workers share: store options and the workload mix. Both sides must
/// use the same values, or the driver's replay of a worker's steps would diverge.
enum CrashTestSettings {
    /// Synchronous durability (a commit returns after fdatasync), 64 KiB segments (frequent
    /// roll-overs), 512-byte frames (multi-frame transactions), 2 KiB child spill threshold,
    /// background compaction and checkpoints with low thresholds (so kills land in them).
    static func options() -> LogStoreOptions {
        var o = DataStorePowerLossConfiguration.withBackgroundMaintenance(DataStorePowerLossConfiguration(seed: 0, cycles: 0).options)
        o.encryption = encryption
        return o
    }

    /// Whether the run's stores are encrypted: `LOGSTORE_CRASHTEST_ENCRYPTED=1` in the
    /// environment (the driver's workers inherit it), with a fixed test key. Every harness of the
    /// process (kill -9 driver and workers, power loss at both levels) reads it.
    static let encrypted = ProcessInfo.processInfo.environment["LOGSTORE_CRASHTEST_ENCRYPTED"] == "1"

    /// The stores' encryption (``encrypted``): AES-256-GCM under a fixed test key, or none.
    static var encryption: StoreEncryption {
        guard encrypted else { return .none }
        return (try? .aes256GCM(key: [UInt8](repeating: 0xC7, count: 32))) ?? .none
    }

    static let workload = DataStoreCrashWorkloadGenerator()
}

/// Writes one line to stdout with a single `write(2)` (atomic for a pipe; no buffering), so the
/// driver sees exactly the lines written before the process died.
func emit(_ line: String) {
    var bytes = Array(line.utf8)
    bytes.append(UInt8(ascii: "\n"))
    var offset = 0
    while offset < bytes.count {
        let n = bytes[offset...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        if n < 0 {
            if errno == EINTR { continue }
            return
        }
        offset += n
    }
}

/// `logstore-crashtest worker`: opens the store, checks that it shows what the driver expects,
/// runs the workload and reports every step on stdout, until it is killed or runs out of steps.
///
/// Protocol (one line each, written before/after the event):
/// `opening`, `ready <txn>`, `step <name>` (before a step that commits nothing), `begin <txn>
/// <write|async|merge>` (before a commit starts), `ack <txn>` (after the commit returned),
/// `done` (after a clean tearDown), `violation <message>` (exit 2), `error <message>` (exit 3).
struct Worker: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run one crash-test worker (started by the driver; not for direct use).")

    @Option(help: "The store directory.")
    var dir: String

    @Option(help: "The worker's workload seed.")
    var seed: UInt64

    @Option(help: "The number of the last transaction the store must show at open.")
    var expectTransaction: UInt64 = 0

    @Option(help: "The digest of the state the store must show at open (DataStoreCrashTypes.digest).")
    var expectDigest: String?

    @Option(help: "The most workload steps to run before a clean exit.")
    var steps: Int = 300

    @Option(help: "Sleep up to this many microseconds after each mutating I/O operation (a slow disk; 0: none).")
    var ioDelayUs: UInt32 = 0

    func run() throws {
        // A worker must not outlive its driver: it stops at the first step after the driver died.
        let driver = getppid()
        emit("opening")
        let url = URL(fileURLWithPath: dir)
        let options = CrashTestSettings.options()
        let makeStore: () -> LogDataStore
        if ioDelayUs > 0 {
            let fs = DelayingFileSystem(POSIXFileSystem(), maxDelayMicroseconds: ioDelayUs)
            makeStore = { LogDataStore(path: url.path, fileSystem: fs, options: options) }
        } else {
            makeStore = { LogDataStore(directory: url, options: options) }
        }
        let interp = DataStoreCrashInterpreter(model: DataStoreCrashModel(), makeStore: makeStore)
        do {
            try interp.open()
        } catch {
            fail(3, "error setup: \(error)")
        }
        do {
            let state = try interp.observe()
            let markers = (state[CrashWorkloadValue.markerType] ?? [:]).keys.compactMap(CrashWorkloadValue.transactionNumber(ofMarkerKey:))
            let k = markers.max() ?? 0
            let digest = DataStoreCrashTypes.digest(state)
            if k != expectTransaction || (expectDigest != nil && digest != expectDigest) {
                fail(
                    2,
                    "violation the store opened by the worker shows transaction \(k) (digest \(digest)); the driver checked transaction \(expectTransaction) (digest \(expectDigest ?? "-")) and closed it"
                )
            }
            interp.model = DataStoreCrashModel(parent: state, lastTransaction: k)
            emit("ready \(k)")
        } catch {
            fail(
                error is CrashOracleViolation ? 2 : 3,
                "\(error is CrashOracleViolation ? "violation" : "error") reading the store after setup: \(error)")
        }
        var rng = SplitMix64(seed: seed)
        let workload = CrashTestSettings.workload
        for _ in 0..<steps {
            if getppid() != driver { Foundation.exit(4) }
            let step = workload.nextStep(model: interp.model, rng: &rng)
            switch step {
            case .write, .writeAsync, .merge: break
            default: emit("step \(step.name)")
            }
            do {
                try interp.run(step, willCommit: { n, _, kind in emit("begin \(n) \(kind.rawValue)") }, didCommit: { emit("ack \($0)") })
            } catch let v as CrashOracleViolation {
                fail(2, "violation \(step.name): \(v)")
            } catch {
                fail(3, "error \(step.name): \(error)")
            }
            if case .reopen = step { emit("ready \(interp.model.lastTransaction)") }
        }
        do { try interp.close() } catch { fail(3, "error tearDown: \(error)") }
        emit("done")
    }

    func fail(_ status: Int32, _ line: String) -> Never {
        emit(line.replacingOccurrences(of: "\n", with: " | "))
        Foundation.exit(status)
    }
}
