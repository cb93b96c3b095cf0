import ArgumentParser
import Foundation
import LogStoreEngine
import _LogStoreTestSupport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `logstore-crashtest group-commit-worker`: opens the store, reports how far each writer got, and
/// runs the writers until killed. Protocol: `ready`, then `ack <writer> <n>` after each commit
/// returned (one `write(2)` per line).
struct GroupCommitWorker: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "group-commit-worker",
        abstract: "Run one group-commit crash-test worker (started by the driver; not for direct use).")

    @Option(help: "The store directory.")
    var dir: String

    @Option(help: "Writer threads.")
    var writers: Int = 16

    @Option(help: "Sleep up to this many microseconds after each mutating I/O operation (a slow disk; 0: none).")
    var ioDelayUs: UInt32 = 0

    func run() throws {
        let fs: any FileSystem = ioDelayUs > 0 ? DelayingFileSystem(POSIXFileSystem(), maxDelayMicroseconds: ioDelayUs) : POSIXFileSystem()
        let engine: LogEngine
        do {
            engine = try LogEngine.open(directory: dir, fileSystem: fs, options: GroupCommitWorkload.options())
        } catch {
            emit("error open: \(error)")
            Foundation.exit(3)
        }
        // Where each writer resumes: one past its highest item (deleted items are below it).
        var next = [Int](repeating: 0, count: writers)
        do {
            for (k, _) in try engine.snapshot().locations(ofType: GroupCommitWorkload.type) {
                if let (w, n) = GroupCommitWorkload.parse(k), w < writers { next[w] = max(next[w], n + 1) }
            }
        } catch {
            emit("error read: \(error)")
            Foundation.exit(3)
        }
        emit("ready")
        let start = next
        DispatchQueue.concurrentPerform(iterations: writers) { w in
            var n = start[w]
            while true {
                do {
                    try engine.commit(GroupCommitWorkload.operations(w, n))
                } catch {
                    emit("error commit \(w) \(n): \(error)")
                    Foundation.exit(3)
                }
                emit("ack \(w) \(n)")
                n += 1
            }
        }
    }
}
