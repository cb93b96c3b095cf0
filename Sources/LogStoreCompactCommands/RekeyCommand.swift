public import ArgumentParser
import Foundation
import LogStoreCommandSupport
import LogStoreEncryption
import LogStoreEngine

/// `logstore-compact rekey <store> --new-key-file PATH`: rewrites a closed store under a new key
/// (or encrypts a clear store, or with `--decrypt` writes it in the clear), then swaps the
/// rewritten store into the store's place in one atomic exchange of the two directories.
///
/// Crash-safe: until the exchange, the store's directory is the store as it was (old key) and the
/// rewrite lies beside it in `<store>.rekey`; after it, the store's directory is the rewritten
/// store (new key) and the old one lies in `<store>.rekey` until it is removed. A kill at any
/// point leaves a store that opens with exactly one of the two keys; run the command again to
/// finish (a leftover `<store>.rekey` is never the only copy of the data, and is removed).
public struct RekeyCommand: ParsableCommand {
    /// Name and help.
    public static let configuration = CommandConfiguration(
        commandName: "rekey",
        abstract: "Rewrite a closed store under a new key (or encrypt or decrypt it).",
        discussion: """
            Copies every record of the store into a new store beside it (<store>.rekey) sealed \
            under the new key, checks the copy, then exchanges the two directories atomically \
            and removes the old one. The store must be closed (exit 3 if an app has it open). \
            A kill at any point leaves the store whole under the old or the new key: open it \
            with both (`additionalKeys`) until the command has run to the end. The copy is a new \
            store (its own store id): incremental backups and changes(since:) tokens start over. \
            Needs a file system that can exchange two directories atomically (Linux \
            renameat2, macOS renamex_np).

            \(exitCodesHelp)
            """)

    /// The store.
    @Argument(help: "The store directory (closed).")
    public var store: String

    /// `--key-file`, `--key-env`: the store's current key (none for a clear store).
    @OptionGroup public var key: KeyOptions

    /// The new key's file.
    @Option(
        name: .customLong("new-key-file"),
        help: ArgumentHelp("The new key from this file: 32 raw bytes or 64 hex digits.", valueName: "path"))
    public var newKeyFile: String?

    /// The new key's environment variable.
    @Option(
        name: .customLong("new-key-env"),
        help: ArgumentHelp("The new key (64 hex digits) from this environment variable.", valueName: "name"))
    public var newKeyEnv: String?

    /// Write the store in the clear.
    @Flag(name: .long, help: "Write the store in the clear (no new key).")
    public var decrypt = false

    @Option(name: .customLong("new-key"), help: .hidden) var newKeyOnCommandLine: String?

    /// `--json`, `--progress`.
    @OptionGroup public var common: CommonOptions

    /// Creates the command (ArgumentParser calls this).
    public init() {}

    /// Refuses a key on the command line, and asks for exactly one of a new key or `--decrypt`.
    public func validate() throws {
        if newKeyOnCommandLine != nil {
            throw ValidationError(ToolKey.commandLineRefusal("--new-key", alternatives: "--new-key-file PATH or --new-key-env NAME"))
        }
        if newKeyFile != nil && newKeyEnv != nil {
            throw ValidationError("Give the new key once: --new-key-file or --new-key-env, not both.")
        }
        if decrypt == (newKeyFile != nil || newKeyEnv != nil) {
            throw ValidationError("Give the new key (--new-key-file or --new-key-env), or --decrypt to write the store in the clear.")
        }
    }

    /// Rekeys and prints the report. Runs on the calling thread. Throws a failure carrying the
    /// exit status (not a store, locked, wrong key, damage, I/O, a file system that cannot
    /// exchange directories).
    public func run() throws {
        let dir = StoreAccess.resolve(store)
        try StoreAccess.requireStore(dir)
        let old = try StoreAccess.encryption(key, for: dir)
        let newKey = try ToolKey.load(
            file: newKeyFile, environmentVariable: newKeyEnv, environment: ProcessInfo.processInfo.environment, option: "--new-key")
        let new = try newKey.map { try StoreEncryption.aes256GCM(key: $0.bytes) } ?? .none
        let progress = ProgressLine(common.progress)
        defer { progress.finish() }
        let result = try Self.rekey(dir, from: old, to: new, progress: progress)
        progress.finish()
        if common.json {
            Console.out(
                JSON.object([
                    ("command", .string("rekey")),
                    ("store", .string(dir)),
                    ("ok", .bool(true)),
                    ("records", .integer(result.records)),
                    ("encrypted", .bool(new.isEnabled)),
                ]).rendered)
        } else {
            Console.out("rekey \(dir)")
            Console.out("  rewrote \(Format.count(result.records)) records \(new.isEnabled ? "under the new key" : "in the clear")")
            Console.out("OK: the store now opens \(new.isEnabled ? "with the new key only" : "without a key")")
        }
    }

    /// Where the rewrite goes: beside the store.
    static func sidePath(_ dir: String) -> String { dir + ".rekey" }

    /// The three phases: copy beside the store (holding the store's lock), exchange, remove the
    /// old store. Throws as ``run()``.
    static func rekey(_ dir: String, from old: StoreEncryption, to new: StoreEncryption, progress: ProgressLine) throws
        -> StoreCopier.Result
    {
        let side = sidePath(dir)
        // A leftover of an interrupted rekey: before the exchange a partial copy, after it the old
        // store; the store's own directory is whole either way.
        if FileManager.default.fileExists(atPath: side) { try FileManager.default.removeItem(atPath: side) }
        let source = try StoreAccess.openIntact(dir, encryption: old, command: "rekey")
        var closed = false
        defer { if !closed { try? source.close() } }
        let snapshot = try source.snapshot()
        let result = try StoreCopier.copy(snapshot, intoNewStoreAt: side, segmentSize: nil, encryption: new, progress: progress)
        try checkCopy(side, expected: snapshot, encryption: new)
        // The exchange happens while the source's lock is held, so no app writes to the old store
        // in between; the read-only engine writes nothing at close.
        try DirectoryExchange.exchange(dir, side)
        try StoreAccess.fs.syncDirectory(atPath: URL(fileURLWithPath: dir).deletingLastPathComponent().path)
        try source.close()
        closed = true
        try FileManager.default.removeItem(atPath: side)
        try StoreAccess.fs.syncDirectory(atPath: URL(fileURLWithPath: dir).deletingLastPathComponent().path)
        return result
    }

    /// Opens the copy with the new key and checks that it holds as many records of each type as
    /// `expected`. Throws a `.damage` failure otherwise.
    static func checkCopy(_ side: String, expected: EngineSnapshot, encryption: StoreEncryption) throws {
        let copy = try StoreAccess.openEngine(side, options: StoreAccess.readOnlyOptions, encryption: encryption)
        defer { try? copy.close() }
        let snapshot = try copy.snapshot()
        for type in expected.itemTypes where snapshot.count(ofType: type) != expected.count(ofType: type) {
            throw ToolFailure(.damage, "The rewritten store does not hold every record of a type; the store is unchanged.", path: side)
        }
    }
}
