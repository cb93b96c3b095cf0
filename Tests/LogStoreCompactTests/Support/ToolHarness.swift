import Foundation
import LogStoreCompactCommands
import Synchronization
import XCTest
import _LogStoreTestSupport

/// Captures what a command writes, for in-process runs.
final class CapturedConsole: ConsoleSink {
    private let out = Mutex("")
    private let err = Mutex("")
    let errIsTerminal: Bool

    init(errIsTerminal: Bool = false) { self.errIsTerminal = errIsTerminal }

    func writeOut(_ text: String) { out.withLock { $0 += text } }
    func writeErr(_ text: String) { err.withLock { $0 += text } }
    func flush() {}

    var stdout: String { out.withLock { $0 } }
    var stderr: String { err.withLock { $0 } }
}

/// The result of one run of the tool.
struct ToolRun {
    var code: Int32
    var stdout: String
    var stderr: String

    /// stdout parsed as one JSON object.
    func json(file: StaticString = #filePath, line: UInt = #line) throws -> [String: Any] {
        let data = Data(stdout.utf8)
        let object = try JSONSerialization.jsonObject(with: data)
        return try XCTUnwrap(object as? [String: Any], "stdout is not a JSON object: \(stdout)", file: file, line: line)
    }

    /// stdout parsed as JSON lines.
    func jsonLines() throws -> [[String: Any]] {
        try stdout.split(separator: "\n").map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
            guard let dict = object as? [String: Any] else { throw NSError(domain: "not an object: \(line)", code: 0) }
            return dict
        }
    }
}

/// Runs the tool in-process (same parsing, error mapping and exit codes as the binary).
func runTool(_ arguments: [String]) -> ToolRun {
    let console = CapturedConsole()
    let code = LogStoreCompactCLI.main(arguments, console: console)
    return ToolRun(code: code, stdout: console.stdout, stderr: console.stderr)
}

/// Runs the built `logstore-compact` binary and waits for it.
func runBinary(_ arguments: [String]) throws -> ToolRun {
    let process = Process()
    process.executableURL = productsDirectory.appendingPathComponent("logstore-compact")
    process.arguments = arguments
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Read before waiting so a large output cannot fill the pipe and block the child.
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ToolRun(code: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                   stderr: String(decoding: errData, as: UTF8.self))
}

/// Where SwiftPM put the built products (the test bundle sits next to them).
/// The directory of the built products (where `logstore-compact` is).
var productsDirectory: URL { buildProductsDirectory }
