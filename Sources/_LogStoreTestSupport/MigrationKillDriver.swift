import Foundation
import LogStore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The kill -9 driver of the data migrator (Docs/Testing.md, "Migration under kill -9"): copies a
/// LogStore store to SQLite and back with the real `logstore-migrate` binary, killing the copying
/// process with SIGKILL at random moments and resuming it (`--resume`), and requires every copy
/// to end verified equal (`logstore-migrate verify`, exit 0) and the round trip to give the
/// source back item for item.
///
/// Each cycle is one SIGKILL at a random time within the last copy run's duration (so the kills
/// land during opening, batches and commits, not after the end). After the cycles, copies run to
/// the end. `logstore-crashtest migrate-kill` runs it for soaks; MigrationKillTests runs 20 cycles.
/// Use from one thread.
public final class MigrationKillDriver {
    /// A broken promise: what went wrong and where the stores are.
    public struct Violation: Error, CustomStringConvertible {
        /// What happened.
        public var message: String
        /// What happened.
        public var description: String { message }
    }

    let binary: String
    let base: String
    let itemsPerType: Int
    let batchSize: Int
    let verbose: Bool
    var rng: SplitMix64
    /// SIGKILLs sent so far.
    public private(set) var kills = 0
    /// Copy runs that finished before their kill (or after the cycles).
    public private(set) var completedRuns = 0
    /// The longest copy run seen, in seconds (the window kills are drawn from).
    var window = 0.3

    /// A driver running `binary` (a `logstore-migrate`) on stores under `base` (created; removed
    /// by the caller), with `itemsPerType` items of each of 3 types in the source.
    public init(binary: String, base: String, seed: UInt64, itemsPerType: Int = 2_000, batchSize: Int = 50, verbose: Bool = false) {
        self.binary = binary
        self.base = base
        self.itemsPerType = itemsPerType
        self.batchSize = batchSize
        self.verbose = verbose
        rng = SplitMix64(seed: seed)
    }

    var sourcePath: String { base + "/source.store" }
    var sqlitePath: String { base + "/copy.sqlite" }
    var backPath: String { base + "/back.store" }

    /// Runs `cycles` kills over the two copies (LogStore -> SQLite, then SQLite -> LogStore),
    /// then finishes and verifies them. Throws a ``Violation`` at the first broken promise.
    public func run(cycles: Int) throws {
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        try seedSource()
        let half = cycles / 2
        try copyUnderKills(from: sourcePath, to: "sqlite:" + sqlitePath, kills: half)
        try verify(sourcePath, "sqlite:" + sqlitePath)
        try copyUnderKills(from: "sqlite:" + sqlitePath, to: "logstore:" + backPath, kills: cycles - half)
        try verify("sqlite:" + sqlitePath, "logstore:" + backPath)
        try verify(sourcePath, "logstore:" + backPath)
    }

    /// A LogStore source with three item types: UUID, integer and string ids, every value kind.
    func seedSource() throws {
        let store = LogDataStore(directory: URL(fileURLWithPath: sourcePath))
        try store.setup()
        defer { try? store.tearDown() }
        for start in stride(from: 0, to: itemsPerType, by: 1_000) {
            try store.writeSync { a in
                for i in start..<min(itemsPerType, start + 1_000) {
                    let u = UUID(
                        uuid: withUnsafeBytes(of: (rng.next(), rng.next())) { b in
                            (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
                        })
                    try a.insert(
                        DynamicItem(
                            itemType: "Restaurant", id: .uuid(u),
                            attributes: [
                                "name": .string(["Rice & Spice", "caf\u{E9}", "cafe\u{301}", "東京"][i % 4] + " \(i)"),
                                "rating": .int(Int64(i % 5)), "opened": .date(Date(timeIntervalSinceReferenceDate: Double(i) * 7.25)),
                            ]))
                    try a.insert(
                        DynamicItem(
                            itemType: "MenuItem", id: .int(Int64(i) - Int64(itemsPerType / 2)),
                            attributes: [
                                "restaurant": .uuid(u), "price": .double([0.1, -0.0, .nan, 12.5][i % 4]),
                                "spicy": i % 3 == 0 ? .null : .bool(i % 2 == 0),
                            ]))
                    try a.insert(
                        DynamicItem(
                            itemType: "Order", id: .string("o\(i)"),
                            attributes: [
                                "lines": .array([.int(Int64(i)), .string("x")]),
                                "receipt": .bytes((0..<(i % 17)).map { UInt8(truncatingIfNeeded: $0 * i) }),
                            ]))
                }
            }
        }
    }

    /// Runs the copy until it completes, killing it `kills` times first.
    func copyUnderKills(from source: String, to destination: String, kills toSend: Int) throws {
        var sent = 0
        while true {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = [
                "copy", source, destination, "--resume", "--no-verify", "--batch-size", String(batchSize), "--progress", "none",
            ]
            let errPath = base + "/last-stderr.txt"
            _ = FileManager.default.createFile(atPath: errPath, contents: nil)
            process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
            process.standardOutput = FileHandle.nullDevice
            let started = Date()
            try process.run()
            var killed = false
            if sent < toSend {
                let delay = Double(rng.next() % 1_000_000) / 1_000_000 * window
                Thread.sleep(forTimeInterval: delay)
                if process.isRunning {
                    kill(process.processIdentifier, SIGKILL)
                    killed = true
                }
            }
            process.waitUntilExit()
            let took = Date().timeIntervalSince(started)
            if process.terminationReason == .uncaughtSignal {
                guard killed else {
                    throw Violation(message: "logstore-migrate died of signal \(process.terminationStatus) unasked: \(stderrText(errPath))")
                }
                sent += 1
                kills += 1
                if verbose { print("kill \(kills): \(source) -> \(destination) after \(Int(took * 1000)) ms") }
                try checkOpens(destination)
                continue
            }
            guard process.terminationStatus == 0 else {
                throw Violation(
                    message:
                        "logstore-migrate copy \(source) \(destination) --resume exited \(process.terminationStatus): \(stderrText(errPath))"
                )
            }
            completedRuns += 1
            window = max(window, took)
            if sent >= toSend { return }
            // It finished before the kill: the next copy has nothing left, so start this one over.
            let path = stripPrefix(destination)
            for suffix in ["", "-wal", "-shm", "-lock", "-children"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
    }

    /// The destination opens after a kill (a LogStore store recovers; SQLite rolls back).
    func checkOpens(_ destination: String) throws {
        let (status, output) = try runTool(["types", destination, "--json"])
        guard status == 0 || status == 4 else {
            throw Violation(message: "after a kill, logstore-migrate types \(destination) exited \(status): \(output)")
        }
    }

    /// `logstore-migrate verify` must exit 0 (equal).
    func verify(_ source: String, _ destination: String) throws {
        let (status, output) = try runTool(["verify", source, destination, "--json", "--progress", "none"])
        guard status == 0, output.contains("\"equal\":true") else {
            throw Violation(message: "logstore-migrate verify \(source) \(destination) exited \(status): \(output)")
        }
        if verbose { print("verified: \(source) = \(destination)") }
    }

    func runTool(_ arguments: [String]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func stderrText(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? "(no stderr)"
    }

    func stripPrefix(_ s: String) -> String {
        for p in ["sqlite:", "logstore:"] where s.hasPrefix(p) { return String(s.dropFirst(p.count)) }
        return s
    }

    /// One line: kills, runs and where.
    public var summary: String { "migrate-kill: \(kills) SIGKILLs, \(completedRuns) completed runs, every copy verified equal (\(base))" }
}
