import Foundation
public import LogStoreCommandSupport
import Synchronization

/// Captures what a command-line tool writes, for in-process runs of `logstore-compact` and
/// `logstore-migrate` in tests. Thread-safe.
public final class CapturedConsole: ConsoleSink {
    private let out = Mutex("")
    private let err = Mutex("")
    /// What `--progress auto` sees.
    public let errIsTerminal: Bool

    /// A console whose stderr is (or is not) a terminal.
    public init(errIsTerminal: Bool = false) { self.errIsTerminal = errIsTerminal }

    /// Appends to stdout.
    public func writeOut(_ text: String) { out.withLock { $0 += text } }
    /// Appends to stderr.
    public func writeErr(_ text: String) { err.withLock { $0 += text } }
    /// Nothing to flush.
    public func flush() {}

    /// Everything written to stdout.
    public var stdout: String { out.withLock { $0 } }
    /// Everything written to stderr.
    public var stderr: String { err.withLock { $0 } }
}

/// The result of one run of a tool (in-process or a binary).
public struct ToolRun: Sendable {
    /// The exit status.
    public var code: Int32
    /// stdout.
    public var stdout: String
    /// stderr.
    public var stderr: String

    /// A run's result.
    public init(code: Int32, stdout: String, stderr: String) {
        self.code = code
        self.stdout = stdout
        self.stderr = stderr
    }

    /// A thrown description of output that is not what was expected.
    public struct Unexpected: Error, CustomStringConvertible {
        /// What was wrong.
        public var description: String
    }

    /// stdout parsed as one JSON object. Throws ``Unexpected`` otherwise.
    public func json() throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8))
        guard let dict = object as? [String: Any] else { throw Unexpected(description: "stdout is not a JSON object: \(stdout)") }
        return dict
    }

    /// stdout parsed as JSON lines (one object per line). Throws ``Unexpected`` otherwise.
    public func jsonLines() throws -> [[String: Any]] {
        try stdout.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
            guard let dict = object as? [String: Any] else { throw Unexpected(description: "not an object: \(line)") }
            return dict
        }
    }
}
