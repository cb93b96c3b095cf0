import ArgumentParser
import Foundation
import LogStore
import LogStoreCommandSupport

/// `logstore-migrate types STORE`: the item types a store holds and how many items of each (what
/// a copy would move), and whether it holds an interrupted copy.
struct TypesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "types",
        abstract: "List a store's item types and their item counts.")

    @Argument(help: "The store (a LogStore directory or a SQLite file).")
    var store: String

    @OptionGroup var key: KeyOptions

    @OptionGroup var common: CommonOptions

    func run() throws {
        let location = try StoreLocation(store)
        let opened = try location.open(create: false, encryption: try key.encryption())
        defer { try? opened.tearDown() }
        let (types, cursor) = try opened.read { a -> ([(String, Int)], Bool) in
            let names = try a.itemTypeNames().filter { $0 != BackendMigrator.cursorItemType }
            return (
                try names.map { ($0, try a.recordCount(ofType: $0)) },
                try a.recordCount(ofType: BackendMigrator.cursorItemType) > 0
            )
        }
        if common.json {
            Console.out(
                JSON.object([
                    ("store", .string(location.description)),
                    ("interruptedCopy", .bool(cursor)),
                    ("types", .array(types.map { .object([("itemType", .string($0.0)), ("items", .integer($0.1))]) })),
                ]).rendered)
            return
        }
        for (name, count) in types { Console.out("\(Format.pad(name, 32)) \(Format.padLeft(Format.count(count), 12))") }
        Console.out("\(Format.count(types.count)) type(s), \(Format.count(types.reduce(0) { $0 + $1.1 })) items in \(location)")
        if cursor { Console.out("note: holds an interrupted copy; finish it with `logstore-migrate SRC \(store) --resume`") }
    }
}
