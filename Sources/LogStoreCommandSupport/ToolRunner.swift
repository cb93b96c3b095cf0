package import ArgumentParser
import LogStoreEngine

/// The entry point every LogStore command-line tool shares: parses the arguments, runs the
/// command with its output going to a console, and maps every outcome to the documented exit
/// codes (``ToolExitCode``; with `--json`, failures are also printed as `{"error": ...}`).
package enum ToolRunner {
    /// Parses `arguments` (without the program name) as `root`, runs it with output going to
    /// `console` (the process's streams when nil), and returns the exit status. Never throws and
    /// never exits the process. Runs on the calling thread.
    package static func main(_ root: any ParsableCommand.Type, toolName: String, _ arguments: [String], console: (any ConsoleSink)?)
        -> Int32
    {
        let sink = console ?? StandardConsole()
        defer { sink.flush() }
        return Console.$current.withValue(sink) {
            let json = arguments.contains("--json")
            do {
                var command = try root.parseAsRoot(arguments)
                try command.run()
                return ToolExitCode.ok.rawValue
            } catch let failure as ToolFailure {
                return report(failure, toolName: toolName, json: json)
            } catch let e as LogStoreError {
                return report(ToolFailure(ToolExitCode.forError(e), e.description, path: e.path), toolName: toolName, json: json)
            } catch let code as ExitCode {
                return code.rawValue
            } catch {
                let code = root.exitCode(for: error)
                let message = root.fullMessage(for: error)
                if code == .success {
                    // --help, --version: the requested text on stdout.
                    if !message.isEmpty { Console.out(message) }
                    return ToolExitCode.ok.rawValue
                }
                if code == .validationFailure {
                    return report(ToolFailure(.usage, message), toolName: toolName, json: json, prefix: false)
                }
                return report(ToolFailure(.io, message), toolName: toolName, json: json)
            }
        }
    }

    /// Prints `failure` on stderr (and as JSON on stdout with `--json`); returns its exit status.
    static func report(_ failure: ToolFailure, toolName: String, json: Bool, prefix: Bool = true) -> Int32 {
        Console.err(prefix ? "\(toolName): error: \(failure.message)" : failure.message)
        if json {
            Console.out(
                JSON.object([
                    (
                        "error",
                        .object([
                            ("code", .string(failure.code.name)),
                            ("exitCode", .integer(failure.code.rawValue)),
                            ("message", .string(failure.message)),
                            ("path", failure.path.map { .string($0) } ?? .null),
                        ])
                    )
                ]).rendered)
        }
        return failure.code.rawValue
    }

    /// Runs `body` with the tool's output going to `console` (for calling a parsed command's
    /// `run()` directly). Runs `body` on the calling thread.
    package static func withConsole<R>(_ console: any ConsoleSink, _ body: () throws -> R) rethrows -> R {
        try Console.$current.withValue(console, operation: body)
    }
}
