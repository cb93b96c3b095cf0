public import ArgumentParser
import Foundation

/// The key options of every command that opens a LogStore store: the store's 256-bit key read
/// from a file (`--key-file PATH`) or an environment variable (`--key-env NAME`), never from the
/// command line, where every user of the machine sees it in the process list and the shell keeps
/// it in its history (`--key` is refused, saying so).
public struct KeyOptions: ParsableArguments, Sendable {
    /// A file holding the key: 32 raw bytes, or 64 hexadecimal digits (whitespace around them is
    /// ignored).
    @Option(
        name: .customLong("key-file"),
        help: ArgumentHelp("Read the store's 256-bit key from this file: 32 raw bytes or 64 hex digits (chmod 600 it).", valueName: "path"))
    public var keyFile: String?

    /// An environment variable holding the key as 64 hexadecimal digits.
    @Option(
        name: .customLong("key-env"),
        help: ArgumentHelp("Read the store's 256-bit key (64 hex digits) from this environment variable.", valueName: "name"))
    public var keyEnv: String?

    /// Present only to refuse it with a reason (``validate()``).
    @Option(name: .customLong("key"), help: .hidden)
    var keyOnCommandLine: String?

    /// No key (a store that is not encrypted).
    public init() {}

    /// Refuses `--key` and a key given twice.
    public func validate() throws {
        if keyOnCommandLine != nil {
            throw ValidationError(ToolKey.commandLineRefusal("--key", alternatives: "--key-file PATH or --key-env NAME"))
        }
        if keyFile != nil && keyEnv != nil { throw ValidationError("Give the key once: --key-file or --key-env, not both.") }
    }

    /// The key given, or nil. Reads the file or the environment variable once, on the calling
    /// thread. Throws a `.usage` ``ToolFailure`` that says what is wrong with the file or
    /// variable, never what it holds.
    package func load(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ToolKey? {
        try ToolKey.load(file: keyFile, environmentVariable: keyEnv, environment: environment, option: "--key")
    }
}

/// A store key read by a tool: 32 bytes. Its description never shows them.
package struct ToolKey: Sendable, CustomStringConvertible {
    /// The key.
    package let bytes: [UInt8]

    /// `<256-bit key>`, never the bytes.
    package var description: String { "<256-bit key>" }

    /// Why a key on the command line is refused, naming the options to use instead.
    package static func commandLineRefusal(_ option: String, alternatives: String) -> String {
        "\(option) is refused: a key on the command line is visible to every user of the machine (the process list) and stays in the shell's history. Use \(alternatives)."
    }

    /// The key from `file` or from the variable `environmentVariable` of `environment` (at most
    /// one of them given), or nil when neither is. `option` names the options in messages
    /// (`--key`: `--key-file`, `--key-env`). Throws a `.usage` ``ToolFailure``.
    package static func load(file: String?, environmentVariable: String?, environment: [String: String], option: String) throws
        -> ToolKey?
    {
        if let file { return try fromFile(file, option: option) }
        if let name = environmentVariable { return try fromEnvironment(name, environment: environment, option: option) }
        return nil
    }

    /// The key in the file at `path`: 32 raw bytes, or 64 hex digits with optional whitespace
    /// around them. Warns on stderr when other users can read the file.
    static func fromFile(_ path: String, option: String) throws -> ToolKey {
        let url = URL(fileURLWithPath: path)
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw ToolFailure(.usage, "Cannot read the key file \(path) (\(option)-file): \(Self.reason(error)).", path: path)
        }
        if let mode = (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int, mode & 0o077 != 0 {
            Console.err("warning: the key file \(path) can be read by other users (mode \(String(mode & 0o777, radix: 8))); chmod 600 it.")
        }
        let bytes = [UInt8](data)
        if bytes.count == 32 { return ToolKey(bytes: bytes) }
        if let key = hexKey(bytes) { return ToolKey(bytes: key) }
        throw ToolFailure(
            .usage,
            "The key file \(path) (\(option)-file) holds \(bytes.count) bytes: a key file holds the 32-byte key itself, or the key as 64 hexadecimal digits.",
            path: path)
    }

    /// The key in environment variable `name`: 64 hex digits, optional whitespace around them.
    static func fromEnvironment(_ name: String, environment: [String: String], option: String) throws -> ToolKey {
        guard let value = environment[name], !value.isEmpty else {
            throw ToolFailure(.usage, "The environment variable \(name) (\(option)-env) is not set or is empty.")
        }
        guard let key = hexKey(Array(value.utf8)) else {
            throw ToolFailure(
                .usage,
                "The environment variable \(name) (\(option)-env) does not hold a key: give the 256-bit key as 64 hexadecimal digits (it holds \(value.utf8.count) characters)."
            )
        }
        return ToolKey(bytes: key)
    }

    /// 32 bytes from 64 hex digits (either case) with optional ASCII whitespace around them.
    static func hexKey(_ text: [UInt8]) -> [UInt8]? {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        guard let first = text.firstIndex(where: { !isSpace($0) }), let last = text.lastIndex(where: { !isSpace($0) }) else { return nil }
        let digits = text[first...last]
        guard digits.count == 64 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(32)
        var high: UInt8? = nil
        for c in digits {
            let v: UInt8
            switch c {
            case 0x30...0x39: v = c - 0x30
            case 0x41...0x46: v = c - 0x41 + 10
            case 0x61...0x66: v = c - 0x61 + 10
            default: return nil
            }
            if let h = high {
                out.append(h << 4 | v)
                high = nil
            } else {
                high = v
            }
        }
        return out
    }

    static func reason(_ error: any Error) -> String {
        let ns = error as NSError
        guard ns.domain == NSCocoaErrorDomain else { return "the file cannot be read" }
        switch ns.code {
        case NSFileReadNoSuchFileError: return "no such file"
        case NSFileReadNoPermissionError: return "permission denied"
        default: return "the file cannot be read"
        }
    }
}
