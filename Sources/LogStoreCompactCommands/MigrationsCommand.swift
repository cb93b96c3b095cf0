public import ArgumentParser
import Foundation
import LogStoreEngine

/// `logstore-compact migrations <store>`: the store's history, read through the engine alone: the
/// migrations it has applied, in order, and the changes of its index declarations
/// (``StoreHistory``). Opens the store read-only (salvage recovery: nothing is cut or removed).
public struct MigrationsCommand: ParsableCommand {
    /// Name and help.
    public static let configuration = CommandConfiguration(
        commandName: "migrations",
        abstract: "List the migrations a store has applied and its index changes.",
        discussion: """
            Prints the store's history (the reserved item type logstore.history), oldest first: \
            each migration with when it ran, how long it took and how many records it changed; \
            each change of an item type's declared indexes; and a development erase, if any. An \
            app refuses to open a store that has applied a migration it does not register. \
            Exit 0; 1 when a history record cannot be read.

            \(exitCodesHelp)
            """)

    /// The store directory.
    @Argument(help: "The store directory (only read).")
    public var store: String

    /// `--key-file`, `--key-env`: the key of an encrypted store.
    @OptionGroup public var key: KeyOptions

    /// `--json`, `--progress`.
    @OptionGroup public var common: CommonOptions

    /// Creates the command (ArgumentParser calls this).
    public init() {}

    /// Prints the history. Runs on the calling thread. Throws a failure carrying the exit status
    /// (not a store, locked, I/O, a damaged history record).
    public func run() throws {
        let dir = StoreAccess.resolve(store)
        try StoreAccess.requireStore(dir)
        let encryption = try StoreAccess.encryption(key, for: dir)
        let engine = try StoreAccess.openEngine(dir, options: StoreAccess.readOnlyOptions, encryption: encryption)
        defer { try? engine.close() }
        let entries: [StoreHistory.Entry]
        do {
            entries = try StoreHistory.entries(in: try engine.snapshot())
        } catch let e as LogStoreError where e.code == .corruption {
            throw ToolFailure(.damage, e.message, path: dir)
        }
        let dates = AttributeJSON(typed: false).dates
        let applied = entries.filter { $0.kind == .migration }.map(\.name)
        if common.json {
            Console.out(
                JSON.object([
                    ("command", .string("migrations")),
                    ("store", .string(dir)),
                    ("applied", .array(applied.map { .string($0) })),
                    ("history", .array(entries.map { Self.json($0, dates) })),
                ]).rendered)
            return
        }
        let indexChanges = entries.filter { $0.kind == .indexes }.count
        Console.out("migrations of \(dir): \(applied.count) applied, \(indexChanges) index change\(indexChanges == 1 ? "" : "s")")
        if entries.isEmpty { Console.out("  (no history: no migration has run and no index was declared)") }
        for e in entries {
            var line = "  #\(e.ordinal)  \(dates.string(from: e.at))  " + Format.pad(e.kind.rawValue, 9) + "  " + e.name
            switch e.kind {
            case .migration:
                var details: [String] = []
                if let ms = e.durationMs { details.append("\(Format.count(ms)) ms") }
                if let c = e.changes { details.append("\(Format.count(c)) record\(c == 1 ? "" : "s") changed") }
                if !details.isEmpty { line += "  (" + details.joined(separator: ", ") + ")" }
            case .indexes:
                let declared = (e.indexes ?? []).map { i in i.definition + (i.entries.map { " built, \(Format.count($0)) entries" } ?? "") }
                line += ": " + (declared.isEmpty ? "no indexes" : declared.joined(separator: "; "))
                if let dropped = e.dropped, !dropped.isEmpty { line += "; dropped " + dropped.joined(separator: ", ") }
            case .erase:
                line = "  #\(e.ordinal)  \(dates.string(from: e.at))  erase      (development option) \(e.reason ?? "")"
            default:
                break
            }
            Console.out(line)
        }
    }

    static func json(_ e: StoreHistory.Entry, _ dates: ISO8601DateFormatter) -> JSON {
        var m: [(String, JSON)] = [
            ("ordinal", .uint(e.ordinal)), ("kind", .string(e.kind.rawValue)), ("name", .string(e.name)),
            ("at", .string(dates.string(from: e.at))),
        ]
        if let ms = e.durationMs { m.append(("durationMs", .integer(ms))) }
        if let c = e.changes { m.append(("changes", .integer(c))) }
        if let indexes = e.indexes {
            m.append(
                (
                    "indexes",
                    .array(
                        indexes.map { i in
                            JSON.object([
                                ("name", .string(i.name)), ("definition", .string(i.definition)),
                                ("hash", .string(String(i.hash, radix: 16))),
                                ("entries", i.entries.map { .integer($0) } ?? .null),
                            ])
                        })
                ))
        }
        if let dropped = e.dropped { m.append(("dropped", .array(dropped.map { .string($0) }))) }
        if let reason = e.reason { m.append(("reason", .string(reason))) }
        return .object(m)
    }
}
