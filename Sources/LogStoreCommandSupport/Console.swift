import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where the tool's output goes: results to ``writeOut(_:)`` (stdout), diagnostics and progress
/// to ``writeErr(_:)`` (stderr). The binary uses the process's standard streams; tests pass a sink
/// that captures both (see ``LogStoreCompactCLI/main(_:console:)``).
///
/// Implementations must be callable from any thread (the tool itself writes from the thread that
/// runs the command).
public protocol ConsoleSink: AnyObject, Sendable {
    /// Writes result text (stdout). May buffer until ``flush()``.
    func writeOut(_ text: String)
    /// Writes diagnostic or progress text (stderr). Not buffered.
    func writeErr(_ text: String)
    /// Whether stderr is a terminal (decides `--progress auto`).
    var errIsTerminal: Bool { get }
    /// Writes out anything buffered.
    func flush()
}

/// The process's stdout and stderr, through `write(2)`. Stdout is buffered in 64 KiB chunks
/// (dump prints a line per record); stderr is not.
package final class StandardConsole: ConsoleSink {
    private let buffer = Mutex<[UInt8]>([])

    package let errIsTerminal: Bool = isatty(2) != 0

    package init() {}

    package func writeOut(_ text: String) {
        let full = buffer.withLock { b -> [UInt8]? in
            b.append(contentsOf: text.utf8)
            guard b.count >= 64 << 10 else { return nil }
            defer { b.removeAll(keepingCapacity: true) }
            return b
        }
        if let full { Self.writeAll(1, full) }
    }

    package func writeErr(_ text: String) {
        flush()
        Self.writeAll(2, Array(text.utf8))
    }

    package func flush() {
        let pending = buffer.withLock { b -> [UInt8] in
            defer { b.removeAll(keepingCapacity: true) }
            return b
        }
        if !pending.isEmpty { Self.writeAll(1, pending) }
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buf in
            guard let base = buf.baseAddress else { return }
            var done = 0
            while done < buf.count {
                let n = write(fd, base + done, buf.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    return  // a closed pipe or full disk: nothing sensible left to do with output
                }
                done += n
            }
        }
    }
}

/// The console of the command running on this task or thread (set by
/// ``LogStoreCompactCLI/main(_:console:)`` and ``LogStoreCompactCLI/withConsole(_:_:)``).
package enum Console {
    @TaskLocal package static var current: any ConsoleSink = StandardConsole()

    /// Writes a result line to stdout.
    package static func out(_ line: String) { current.writeOut(line + "\n") }
    /// Writes a diagnostic line to stderr.
    package static func err(_ line: String) { current.writeErr(line + "\n") }
}
