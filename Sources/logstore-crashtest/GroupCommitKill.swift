import ArgumentParser
import Foundation
import LogStoreEngine
import _LogStoreTestSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `logstore-crashtest group-commit`: kill -9 of a worker whose writer threads (16 by default)
/// commit at once on one store, so commits share `fdatasync`s and many are appended but unsynced
/// when the kill lands; half the workers run on a slow disk; some kills land during the worker's
/// own open (recovery). After each kill the store must open (strict, no salvage) with, for every
/// writer, exactly the items of a prefix of its commits that includes every acknowledged one and at
/// most one more, every value intact and no delete undone (``GroupCommitWorkload``).
struct GroupCommitKill: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "group-commit",
        abstract: "Kill -9 workers whose many writer threads share group commits; check every recovery.",
        discussion: "Docs/Testing.md, \"Crash recovery\". Prints its seed; a failure keeps the store and says how to rerun.")

    @OptionGroup var length: RunLength

    @Option(help: "Writer threads per worker.")
    var writers: Int = 16

    @Option(help: "Start a fresh store every this many cycles.")
    var cyclesPerStore: Int = 20

    func run() throws {
        StopSignal.install()
        let seed = length.seed ?? UInt64.random(in: 0...UInt64.max)
        let root = FileManager.default.isWritableFile(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        let base = (root as NSString).appendingPathComponent("logstore-groupcommit-\(getpid())-\(seed)")
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        let store = (base as NSString).appendingPathComponent("store")
        let stderrPath = (base as NSString).appendingPathComponent("worker-stderr.txt")
        let executable = Bundle.main.executablePath ?? CommandLine.arguments[0]
        print("logstore-crashtest group-commit: seed \(seed), \(writers) writers, work directory \(base)")
        var rng = SplitMix64(seed: seed)
        let limit = length.cycleLimit()
        let deadline = length.seconds.map { Date().addingTimeInterval($0) }
        var durable = [Int](repeating: 0, count: writers)  // commits each writer is known to have made durable
        var done = 0
        var acks = 0
        var killsDuringOpen = 0
        var slow = 0
        var inFlightKept = 0
        var cycle = 0
        func fail(_ message: String) throws -> Never {
            print("VIOLATION cycle \(cycle): \(message)")
            print(
                "FAILED (seed \(seed)). Rerun: logstore-crashtest group-commit --seed \(seed) --cycles \(cycle + 1) --writers \(writers); the store is kept: \(store)"
            )
            throw ExitCode(1)
        }
        while cycle < limit {
            if let deadline, Date() >= deadline { break }
            if StopSignal.requested { break }
            if cycle % max(1, cyclesPerStore) == 0 {
                try? FileManager.default.removeItem(atPath: store)
                durable = [Int](repeating: 0, count: writers)
            }
            let delay: UInt32 = rng.chance(0.5) ? 300 : 0
            if delay > 0 { slow += 1 }
            let child = try ChildProcess(
                executable: executable,
                arguments: ["group-commit-worker", "--dir", store, "--writers", "\(writers)", "--io-delay-us", "\(delay)"],
                stderrPath: stderrPath)
            var acked = [Int](repeating: -1, count: writers)
            var seen = 0
            func take(_ line: String) throws {
                let parts = line.split(separator: " ")
                if parts.first == "ack", parts.count == 3, let w = Int(parts[1]), let n = Int(parts[2]), w < writers {
                    acked[w] = max(acked[w], n)
                    seen += 1
                } else if parts.first == "error" {
                    try fail("worker: \(line)")
                }
            }
            if rng.chance(0.15) {
                // Early: most of these land in the worker's open, so recovery itself is killed.
                usleep(UInt32(rng.int(in: 0...20_000)))
                if child.readLine(timeout: 0) != "ready" { killsDuringOpen += 1 }
                child.kill()
            } else {
                let target = rng.int(in: 1...400)
                while seen < target, let line = child.readLine(timeout: 60) { try take(line) }
                usleep(UInt32(rng.int(in: 0...2_000)))
                child.kill()
            }
            // Every acknowledgement written before the kill counts.
            while let line = child.readLine(timeout: 0.5) { try take(line) }
            acks += seen
            child.wait()

            // The check: a strict open, then every writer's items.
            let engine: LogEngine
            do {
                var o = GroupCommitWorkload.options()
                o.autoCompaction = false
                engine = try LogEngine.open(directory: store, options: o)
            } catch {
                try fail("the store does not open after the kill: \(error)")
            }
            do {
                let made = try GroupCommitWorkload.check(try engine.snapshot(), writers: writers, acknowledged: acked, durable: durable)
                for w in 0..<writers where made[w] > max(durable[w], acked[w] + 1) { inFlightKept += 1 }
                durable = made
            } catch let v as GroupCommitViolation {
                try? engine.close()
                try fail(v.description)
            } catch {
                try? engine.close()
                try fail("reading the recovered store failed: \(error)")
            }
            try? engine.close()
            done += 1
            cycle += 1
        }
        print(
            "group-commit: \(done) cycles, \(writers) writers, \(acks) commits acknowledged, \(killsDuringOpen) kills during the worker's open, \(slow) slow-disk workers, \(inFlightKept) in-flight commits kept; violations: 0"
        )
        try? FileManager.default.removeItem(atPath: base)
    }
}
