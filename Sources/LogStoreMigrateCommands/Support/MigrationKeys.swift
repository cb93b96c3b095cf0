import ArgumentParser
import Foundation
import LogStore
import LogStoreCommandSupport
import LogStoreEncryption

/// The keys of the two stores of a copy or a verification: each LogStore side's 256-bit key from a
/// file or an environment variable, never from the command line (`--key`, `--source-key` and
/// `--destination-key` are refused, saying why).
struct MigrationKeyOptions: ParsableArguments {
    @Option(
        name: .customLong("source-key-file"),
        help: ArgumentHelp("The source LogStore store's key from this file: 32 raw bytes or 64 hex digits.", valueName: "path"))
    var sourceKeyFile: String?

    @Option(
        name: .customLong("source-key-env"),
        help: ArgumentHelp("The source LogStore store's key (64 hex digits) from this environment variable.", valueName: "name"))
    var sourceKeyEnv: String?

    @Option(
        name: .customLong("destination-key-file"),
        help: ArgumentHelp("The destination LogStore store's key from this file: 32 raw bytes or 64 hex digits.", valueName: "path"))
    var destinationKeyFile: String?

    @Option(
        name: .customLong("destination-key-env"),
        help: ArgumentHelp("The destination LogStore store's key (64 hex digits) from this environment variable.", valueName: "name"))
    var destinationKeyEnv: String?

    @Option(name: .customLong("key"), help: .hidden) var key: String?
    @Option(name: .customLong("source-key"), help: .hidden) var sourceKey: String?
    @Option(name: .customLong("destination-key"), help: .hidden) var destinationKey: String?

    /// Refuses keys on the command line and a side's key given twice.
    func validate() throws {
        for (option, value, side) in [
            ("--key", key, "--source-key-file/--source-key-env or --destination-key-file/--destination-key-env"),
            ("--source-key", sourceKey, "--source-key-file PATH or --source-key-env NAME"),
            ("--destination-key", destinationKey, "--destination-key-file PATH or --destination-key-env NAME"),
        ] where value != nil {
            throw ValidationError(ToolKey.commandLineRefusal(option, alternatives: side))
        }
        if sourceKeyFile != nil && sourceKeyEnv != nil {
            throw ValidationError("Give the source's key once: --source-key-file or --source-key-env, not both.")
        }
        if destinationKeyFile != nil && destinationKeyEnv != nil {
            throw ValidationError("Give the destination's key once: --destination-key-file or --destination-key-env, not both.")
        }
    }

    /// The source's encryption (``StoreEncryption/none`` without a key). Throws `.usage` failures.
    func sourceEncryption() throws -> StoreEncryption {
        try Self.encryption(
            ToolKey.load(
                file: sourceKeyFile, environmentVariable: sourceKeyEnv, environment: ProcessInfo.processInfo.environment,
                option: "--source-key"))
    }

    /// The destination's encryption (``StoreEncryption/none`` without a key). Throws `.usage` failures.
    func destinationEncryption() throws -> StoreEncryption {
        try Self.encryption(
            ToolKey.load(
                file: destinationKeyFile, environmentVariable: destinationKeyEnv, environment: ProcessInfo.processInfo.environment,
                option: "--destination-key"))
    }

    /// AES-256-GCM with `key`, or none.
    static func encryption(_ key: ToolKey?) throws -> StoreEncryption {
        guard let key else { return .none }
        return try .aes256GCM(key: key.bytes)
    }
}

extension KeyOptions {
    /// The store's encryption (``StoreEncryption/none`` without a key). Throws `.usage` failures.
    func encryption() throws -> StoreEncryption {
        try MigrationKeyOptions.encryption(load())
    }
}
