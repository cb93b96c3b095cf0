public import ArgumentParser
import LogStoreCommandSupport
import LogStoreEngine

/// `logstore-compact dump <store> [--type T]`: the live records as JSON lines, readable without
/// the app's Swift types. Opens the store read-only (salvage recovery: nothing is cut or removed).
public struct DumpCommand: ParsableCommand {
    /// Name and help.
    public static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Print the live records as JSON lines.",
        discussion: """
            One line per record, types in name order, keys in byte order:
              {"type":"User","key":"u1","keyEncoding":"utf8","sequence":3,"value":{...}}
            key is the UTF-8 text when printable, else lowercase hex (keyEncoding says which). \
            Values: dates as ISO-8601 strings, bytes as base64, UUIDs as strings; --typed wraps \
            those as {"$date":..,"$seconds":..}, {"$bytes":..}, {"$uuid":..} so nothing is \
            ambiguous. The output is always JSON lines; --json is accepted for uniformity.

            \(exitCodesHelp)
            """)

    /// The store directory.
    @Argument(help: "The store directory.")
    public var store: String

    /// Item types to dump (all when empty).
    @Option(name: .customLong("type"), help: "Only records of this item type (repeatable).")
    public var types: [String] = []

    /// Wrap non-JSON types.
    @Flag(name: .long, help: "Tag dates, bytes and UUIDs ({\"$date\": ...}) instead of plain strings.")
    public var typed = false

    /// `--key-file`, `--key-env`: the key of an encrypted store.
    @OptionGroup public var key: KeyOptions

    /// `--json`, `--progress`.
    @OptionGroup public var common: CommonOptions

    /// Creates the command (ArgumentParser calls this).
    public init() {}

    /// Prints the records. Runs on the calling thread. Throws a failure carrying the exit status
    /// (not a store, locked, I/O), or `ExitCode(1)` after printing what it could read when the
    /// store is damaged.
    public func run() throws {
        let dir = StoreAccess.resolve(store)
        try StoreAccess.requireStore(dir)
        let encryption = try StoreAccess.encryption(key, for: dir)
        guard StoreAccess.fs.itemKind(atPath: _joinPath(dir, LogStoreFormat.manifestFileName)) == .file else {
            throw ToolFailure(
                .damage, "The store's MANIFEST is missing. Run `logstore-compact verify` for details and `salvage` to recover the data.",
                path: dir)
        }
        let engine = try StoreAccess.openEngine(dir, options: StoreAccess.readOnlyOptions, encryption: encryption)
        defer { try? engine.close() }
        var damaged = false
        for drop in engine.recoveryReport.dropped {
            Console.err("logstore-compact: damaged, skipped: \(drop)")
            damaged = true
        }
        let snapshot = try engine.snapshot()
        let wanted = types.isEmpty ? snapshot.itemTypes.sorted() : Array(Set(types)).sorted()
        for t in wanted where snapshot.count(ofType: t) == 0 {
            Console.err("logstore-compact: no records of type \(t)")
        }
        let total = UInt64(wanted.reduce(0) { $0 + snapshot.count(ofType: $1) })
        let progress = ProgressLine(common.progress)
        defer { progress.finish() }
        let encoder = AttributeJSON(typed: typed)
        var done: UInt64 = 0
        var undecodable = 0
        for type in wanted {
            let keys = try snapshot.keys(ofType: type).sorted()
            for key in keys {
                guard let loc = try snapshot.location(type: type, key: key), let bytes = try snapshot.value(type: type, key: key) else {
                    continue
                }
                let value: JSON
                do {
                    value = encoder.json(try AttributeValue.decode(Array(bytes)))
                } catch let e as LogStoreError {
                    undecodable += 1
                    if undecodable <= 10 {
                        Console.err(
                            "logstore-compact: \(type) key \(key) does not hold an attribute value (\(e.message)); printed as {\"$undecodable\": base64}"
                        )
                    }
                    value = .object([("$undecodable", .string(Self.base64(bytes)))])
                }
                let k = key.displayed
                Console.out(
                    JSON.object([
                        ("type", .string(type)),
                        ("key", .string(k.text)),
                        ("keyEncoding", .string(k.encoding)),
                        ("sequence", .uint(loc.sequence)),
                        ("value", value),
                    ]).rendered)
                done += 1
                if done % 1024 == 0 { progress.update("dumping", done: done, total: total, unit: .records) }
            }
        }
        progress.update("dumping", done: done, total: total, unit: .records)
        if undecodable > 0 {
            Console.err("logstore-compact: \(undecodable) value\(undecodable == 1 ? "" : "s") did not decode as attribute values")
            damaged = true
        }
        if damaged { throw ExitCode(ToolExitCode.damage.rawValue) }
    }

    static func base64(_ bytes: ArraySlice<UInt8>) -> String {
        AttributeJSON.base64(Array(bytes))
    }
}
