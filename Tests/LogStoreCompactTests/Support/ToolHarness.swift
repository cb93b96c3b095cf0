import Foundation
import LogStoreCompactCommands
import Synchronization
import XCTest
import _LogStoreTestSupport

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
    return ToolRun(
        code: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData, as: UTF8.self))
}

/// Where SwiftPM put the built products (the test bundle sits next to them).
/// The directory of the built products (where `logstore-compact` is).
var productsDirectory: URL { buildProductsDirectory }
