public import Foundation
public import LogStore

// Model-based checking of the DataStore API (Docs/Fuzzing.md and Docs/Testing.md, "Property tests").
//
// A script is a list of ``StoreScriptOperation``s: writes (inserts, deletes, delete-alls), reads
// with requests, child stores, merges with each policy, reopens. ``DataStoreModelChecker`` runs
// it against any `DataStore` (a ``DataStoreLocation`` of a backend) and against a dictionary
// model at once and throws a ``ModelViolation`` at the first difference. The `fuzz-ops` target
// parses scripts from fuzzer bytes (``StoreScript/parse(_:)``); ModelPropertyTests generates them
// with PropertyBased; the conformance suite's `model` cases run seeded random scripts on every
// backend.

/// Item type "ScriptA" of model-checked scripts: integer ids (ascending numeric order).
public struct ScriptItemA: DataStoreItem, Equatable {
    /// The item type on disk.
    public static let itemType = "ScriptA"
    /// The id.
    public var id: Int
    /// The value (sorted and filtered on).
    public var value: Int
    /// `"t<value % 3>"` (filtered on by attribute).
    public var tag: String
    /// An item with id `n` and `value`.
    public init(n: Int, value: Int) {
        id = n
        self.value = value
        tag = "t\(value % 3)"
    }
}

/// Item type "ScriptB" of model-checked scripts: string ids `k<n>` (ascending byte order, so
/// `k10` sorts before `k2`).
public struct ScriptItemB: DataStoreItem, Equatable {
    /// The item type on disk.
    public static let itemType = "ScriptB"
    /// The id, `k<n>`.
    public var id: String
    /// The value (sorted and filtered on).
    public var value: Int
    /// `"t<value % 3>"` (filtered on by attribute).
    public var tag: String
    /// An item with id `k<n>` and `value`.
    public init(n: Int, value: Int) {
        id = "k\(n)"
        self.value = value
        tag = "t\(value % 3)"
    }
}

/// One change inside a write block of a script.
public enum ScriptMutation: Sendable, Hashable, CustomStringConvertible {
    /// Insert or replace item `id` of type `type` (0: ScriptA, 1: ScriptB) with `value`.
    case insert(type: Int, id: Int, value: Int)
    /// Delete item `id` of type `type`.
    case delete(type: Int, id: Int)
    /// Delete every item of type `type`.
    case deleteAll(type: Int)

    /// Short form, e.g. `ins A3=7`.
    public var description: String {
        switch self {
        case .insert(let t, let id, let v): return "ins \(StoreScript.typeName(t))\(id)=\(v)"
        case .delete(let t, let id): return "del \(StoreScript.typeName(t))\(id)"
        case .deleteAll(let t): return "delAll \(StoreScript.typeName(t))"
        }
    }
}

/// One step of a model-checked script. `store` 0 is the root store, 1-3 are child slots (an
/// operation on an empty slot runs on the root). A child's parent is the root or another child.
public enum StoreScriptOperation: Sendable, Hashable, CustomStringConvertible {
    /// One `writeSync` block applying the mutations in order (reads inside check each one).
    case write(store: Int, [ScriptMutation])
    /// A `writeSync` block that applies the mutations and then throws: nothing may be committed.
    case failingWrite(store: Int, [ScriptMutation])
    /// A read with a request: `query` picks the request shape, `argument` its parameters.
    case read(store: Int, type: Int, query: Int, argument: Int)
    /// Makes a new child in `slot` (1-3), replacing the one there: a child of the store in
    /// `parent` (the root when `parent` is 0, empty, or `slot` itself).
    case makeChild(slot: Int, parent: Int)
    /// Merges the child in `slot` into its parent: policy 0 childWins, 1 parentWins, 2 failOnConflict.
    case merge(slot: Int, policy: Int)
    /// Tears the child in `slot` down and sets it up again (a new, empty overlay).
    case resetChild(slot: Int)
    /// Tears the root down and sets it up again (a disk store: a new object on the same
    /// directory). Children fail with `.parentClosed` afterwards.
    case reopen
    /// `nuke()` on the root.
    case nuke

    /// Short form for failure reports.
    public var description: String {
        switch self {
        case .write(let s, let m): return "write@\(s)[\(m.map(\.description).joined(separator: ", "))]"
        case .failingWrite(let s, let m): return "failingWrite@\(s)[\(m.map(\.description).joined(separator: ", "))]"
        case .read(let s, let t, let q, let a): return "read@\(s) \(StoreScript.typeName(t)) q\(q) arg \(a)"
        case .makeChild(let slot, let parent): return "makeChild \(slot) of \(parent)"
        case .merge(let slot, let p): return "merge \(slot) \(["childWins", "parentWins", "failOnConflict"][p % 3])"
        case .resetChild(let slot): return "resetChild \(slot)"
        case .reopen: return "reopen"
        case .nuke: return "nuke"
        }
    }
}

/// A difference between a store and its model, with the script up to the failing step.
public struct ModelViolation: Error, Sendable, CustomStringConvertible {
    /// What differs.
    public var message: String
    /// The steps run, the failing one last.
    public var steps: [String]
    /// Creates a violation.
    public init(_ message: String, steps: [String] = []) {
        self.message = message
        self.steps = steps
    }
    /// The message and the numbered steps.
    public var description: String {
        message + (steps.isEmpty ? "" : "\nsteps:\n" + steps.enumerated().map { "  \($0.offset): \($0.element)" }.joined(separator: "\n"))
    }
}

/// Parsing scripts from bytes (fuzzer input, or property-test generated byte groups).
public enum StoreScript {
    /// Ids are drawn from `0..<idRange`, so scripts hit the same items often.
    public static let idRange = 16

    /// "A" or "B".
    public static func typeName(_ t: Int) -> String { t % 2 == 0 ? "A" : "B" }

    /// A cursor over script bytes; missing bytes read as 0.
    public struct Reader {
        let bytes: [UInt8]
        var at = 0
        /// A reader over `bytes`.
        public init(_ bytes: [UInt8]) { self.bytes = bytes }
        /// Whether every byte was read.
        public var isAtEnd: Bool { at >= bytes.count }
        /// The next byte (0 past the end).
        public mutating func next() -> Int {
            defer { at += 1 }
            return at < bytes.count ? Int(bytes[at]) : 0
        }
    }

    /// Parses a whole script: operations one after another until the bytes run out (at most
    /// `limit`).
    public static func parse(_ bytes: [UInt8], limit: Int = 64) -> [StoreScriptOperation] {
        var r = Reader(bytes)
        var ops: [StoreScriptOperation] = []
        while !r.isAtEnd && ops.count < limit { ops.append(parseOne(&r)) }
        return ops
    }

    /// Parses one operation: the first byte picks the kind, the next ones its arguments.
    public static func parseOne(_ r: inout Reader) -> StoreScriptOperation {
        switch r.next() % 16 {
        case 0, 1, 2, 3, 4: return .write(store: r.next() % 4, mutations(&r))
        case 5, 6, 7: return .read(store: r.next() % 4, type: r.next() % 2, query: r.next(), argument: r.next())
        case 8: return .makeChild(slot: 1 + r.next() % 3, parent: r.next() % 4)
        case 9, 10: return .merge(slot: 1 + r.next() % 3, policy: r.next() % 3)
        case 11: return .resetChild(slot: 1 + r.next() % 3)
        case 12: return .failingWrite(store: r.next() % 4, mutations(&r))
        case 13: return .reopen
        case 14: return .nuke
        default: return .write(store: r.next() % 4, mutations(&r))
        }
    }

    static func mutations(_ r: inout Reader) -> [ScriptMutation] {
        let n = 1 + r.next() % 4
        return (0..<n).map { _ in
            switch r.next() % 10 {
            case 0..<6: return .insert(type: r.next() % 2, id: r.next() % idRange, value: r.next())
            case 6..<9: return .delete(type: r.next() % 2, id: r.next() % idRange)
            default: return .deleteAll(type: r.next() % 2)
            }
        }
    }
}

/// Runs scripts against a store and a dictionary model, comparing after every step.
///
/// Use from one thread. The store lives at a ``DataStoreLocation`` the caller owns (and destroys
/// afterwards); a reopen is `tearDown()`, a new ``DataStoreLocation/makeStore()`` and `setup()`.
public final class DataStoreModelChecker {
    typealias Contents = [Int: [Int: Int]]  // type -> n -> value

    struct Child {
        var store: any DataStore
        /// The parent's slot (0: the root).
        var parent: Int
        var base: Contents
        var baseClock: Int
        var puts: Contents = [:]
        var shadowed: [Int: Set<Int>] = [:]
        var cleared: Set<Int> = []

        func view(_ t: Int) -> [Int: Int] {
            var v = cleared.contains(t) ? [:] : (base[t] ?? [:]).filter { !(shadowed[t]?.contains($0.key) ?? false) }
            for (k, value) in puts[t] ?? [:] { v[k] = value }
            return v
        }
    }

    let location: any DataStoreLocation
    let capabilities: DataStoreCapabilities
    var root: any DataStore
    var contents: Contents = [:]
    /// Per root item: the clock of the root write that last put it (for merge conflicts).
    var lastPut: [Int: [Int: Int]] = [:]
    var clock = 0
    var children: [Int: Child] = [:]
    var steps: [String] = []

    /// A checker with a new, set-up store at `location` (which must be empty), of a backend
    /// that offers `capabilities`: reopens keep the store's data only with
    /// ``DataStoreCapabilities/persistsAcrossReopen`` (otherwise the script's reopens are
    /// skipped); a store that is itself a child (``DataStoreCapabilities/isChildStore``) detects
    /// merge conflicts by value, as child parents do. Throws what `setup()` throws.
    public init(location: any DataStoreLocation, capabilities: DataStoreCapabilities) throws {
        self.location = location
        self.capabilities = capabilities
        root = try location.makeStore()
        try root.setup()
    }

    /// The stores the script runs on now, by slot (0: the root, 1-3: child slots in use).
    public var currentStores: [Int: any DataStore] {
        var out: [Int: any DataStore] = [0: root]
        for (slot, c) in children { out[slot] = c.store }
        return out
    }

    /// The steps run so far (for failure reports of checks layered on this one).
    public var stepsRun: [String] { steps }

    /// Tears the store down. Errors are ignored (the checker is done).
    public func finish() {
        for c in children.values { try? c.store.tearDown() }
        children = [:]
        try? root.tearDown()
    }

    /// Runs every operation, checking the store against the model after each one.
    /// Throws ``ModelViolation`` at the first difference (or unexpected error).
    public func run(_ operations: [StoreScriptOperation]) throws {
        for op in operations {
            steps.append(op.description)
            do {
                try step(op)
                try checkAll()
            } catch let v as ModelViolation {
                throw ModelViolation(v.message, steps: steps)
            } catch {
                throw ModelViolation("unexpected error: \(error)", steps: steps)
            }
        }
    }

    func fail(_ message: String) -> ModelViolation { ModelViolation(message, steps: steps) }

    // MARK: Steps

    func step(_ op: StoreScriptOperation) throws {
        switch op {
        case .write(let s, let mutations):
            if let slot = slotOf(s) { try writeChild(slot, mutations, failing: false) } else { try writeRoot(mutations, failing: false) }
        case .failingWrite(let s, let mutations):
            if let slot = slotOf(s) { try writeChild(slot, mutations, failing: true) } else { try writeRoot(mutations, failing: true) }
        case .read(let s, let t, let q, let a):
            let slot = slotOf(s) ?? 0
            let expected = viewOf(slot)[t] ?? [:]
            if t == 0 {
                try checkRead(ScriptItemA.self, storeOf(slot), expected, query: q, argument: a)
            } else {
                try checkRead(ScriptItemB.self, storeOf(slot), expected, query: q, argument: a)
            }
        case .makeChild(let slot, let p):
            if let old = children[slot] {
                try old.store.tearDown()
                try dropDescendants(of: slot)
            }
            let parent = p != slot && children[p] != nil ? p : 0
            let store = try storeOf(parent).makeChildDataStore()
            children[slot] = Child(store: store, parent: parent, base: viewOf(parent), baseClock: clock)
        case .merge(let slot, let policy):
            guard let child = children[slot] else { return }
            try merge(slot, child, policy: policy)
        case .resetChild(let slot):
            guard let child = children[slot] else { return }
            try child.store.tearDown()
            try dropDescendants(of: slot)
            try child.store.setup()
            children[slot] = Child(store: child.store, parent: child.parent, base: viewOf(child.parent), baseClock: clock)
        case .reopen:
            guard capabilities.contains(.persistsAcrossReopen) else { return }
            try root.tearDown()
            try dropDescendants(of: 0)
            root = try location.makeStore()
            try root.setup()
        case .nuke:
            try root.nuke()
            clock += 1
            contents = [:]
        }
    }

    func slotOf(_ store: Int) -> Int? { store != 0 && children[store] != nil ? store : nil }

    /// The store in `slot` (0: the root).
    func storeOf(_ slot: Int) -> any DataStore { slot == 0 ? root : children[slot]?.store ?? root }

    /// What the store in `slot` shows, per the model.
    func viewOf(_ slot: Int) -> Contents {
        if slot != 0, let c = children[slot] { return [0: c.view(0), 1: c.view(1)] }
        return [0: contents[0] ?? [:], 1: contents[1] ?? [:]]
    }

    /// After `slot`'s store was torn down: its children (and theirs) must fail with
    /// `.parentClosed`; they leave the model.
    func dropDescendants(of slot: Int) throws {
        for (s, c) in children.sorted(by: { $0.key < $1.key }) where c.parent == slot {
            do {
                _ = try c.store.read { try $0.countItems(forRequest: DataStoreRequest(itemType: ScriptItemA.self)) }
                throw fail("child \(s) of torn-down store \(slot) is still readable")
            } catch let e as LogStoreError where e.code == .parentClosed {}
            children[s] = nil
            try dropDescendants(of: s)
        }
    }

    struct Planned: Error {}

    /// A root write: every mutation is checked inside the block against the block's own view.
    func writeRoot(_ mutations: [ScriptMutation], failing: Bool) throws {
        var next = contents
        do {
            try root.writeSync { a in
                for m in mutations { try apply(m, a, &next) }
                if failing { throw Planned() }
            }
        } catch is Planned {
            guard failing else { throw fail("a write threw the marker error of another step") }
            return
        }
        clock += 1
        for m in mutations {
            if case .insert(let t, let id, _) = m { lastPut[t, default: [:]][id] = clock }
        }
        contents = next.filter { !$0.value.isEmpty }
    }

    func writeChild(_ slot: Int, _ mutations: [ScriptMutation], failing: Bool) throws {
        guard var child = children[slot] else { return }
        var view: Contents = [0: child.view(0), 1: child.view(1)]
        do {
            try child.store.writeSync { a in
                for m in mutations { try apply(m, a, &view) }
                if failing { throw Planned() }
            }
        } catch is Planned {
            guard failing else { throw fail("a write threw the marker error of another step") }
            return
        }
        for m in mutations { Self.record(m, in: &child) }
        children[slot] = child
    }

    /// A child's overlay after a mutation: puts, base items hidden, delete-alls.
    static func record(_ m: ScriptMutation, in child: inout Child) {
        switch m {
        case .insert(let t, let id, let v):
            if !child.cleared.contains(t), child.base[t]?[id] != nil { child.shadowed[t, default: []].insert(id) }
            child.puts[t, default: [:]][id] = v
        case .delete(let t, let id):
            child.puts[t]?[id] = nil
            if !child.cleared.contains(t), child.base[t]?[id] != nil { child.shadowed[t, default: []].insert(id) }
        case .deleteAll(let t):
            child.cleared.insert(t)
            child.puts[t] = [:]
            child.shadowed[t] = []
        }
    }

    /// Applies one mutation through the accessor and checks its result and the block's view.
    func apply(_ m: ScriptMutation, _ a: any DataStoreReadWriteAccessor, _ view: inout Contents) throws {
        switch m {
        case .insert(let t, let id, let v):
            if t == 0 { try a.insert(ScriptItemA(n: id, value: v)) } else { try a.insert(ScriptItemB(n: id, value: v)) }
            view[t, default: [:]][id] = v
        case .delete(let t, let id):
            let existed =
                t == 0 ? try a.deleteItem(ofType: ScriptItemA.self, id: id) : try a.deleteItem(ofType: ScriptItemB.self, id: "k\(id)")
            let expected = view[t]?[id] != nil
            guard existed == expected else { throw fail("\(m) returned \(existed), the model says \(expected)") }
            view[t]?[id] = nil
        case .deleteAll(let t):
            let n = t == 0 ? try a.deleteAllItems(ofType: ScriptItemA.self) : try a.deleteAllItems(ofType: ScriptItemB.self)
            let expected = view[t]?.count ?? 0
            guard n == expected else { throw fail("\(m) returned \(n), the model says \(expected)") }
            view[t] = [:]
        }
        // Read-your-writes inside the block.
        let got: [Int: Int] = typeOf(m) == 0 ? try readAll(ScriptItemA.self, a) : try readAll(ScriptItemB.self, a)
        let want = view[typeOf(m)] ?? [:]
        guard got == want else { throw fail("inside the write block after \(m): store \(sorted(got)), model \(sorted(want))") }
    }

    func typeOf(_ m: ScriptMutation) -> Int {
        switch m {
        case .insert(let t, _, _), .delete(let t, _), .deleteAll(let t): return t
        }
    }

    func merge(_ slot: Int, _ child: Child, policy p: Int) throws {
        let policy: MergePolicy = [.childWins, .parentWins, .failOnConflict][p % 3]
        // The child's changes: deletes of base items it hid, puts of every item it wrote.
        var changes: [(t: Int, id: Int, value: Int?)] = []
        for t in [0, 1] {
            let puts = child.puts[t] ?? [:]
            let hidden = child.cleared.contains(t) ? Set((child.base[t] ?? [:]).keys) : (child.shadowed[t] ?? [])
            for id in hidden where puts[id] == nil { changes.append((t, id, nil)) }
            for (id, v) in puts { changes.append((t, id, v)) }
        }
        // A change conflicts when the parent changed that item after the child's base: for the
        // root, any write of it since (by sequence number); for a child parent, a different value.
        let parent = child.parent
        let parentView = viewOf(parent)
        let parentComparesValues = parent != 0 || capabilities.contains(.isChildStore)
        func conflicts(_ t: Int, _ id: Int) -> Bool {
            if parentComparesValues { return parentView[t]?[id] != child.base[t]?[id] }
            if contents[t]?[id] != nil { return (lastPut[t]?[id] ?? 0) > child.baseClock }
            return child.base[t]?[id] != nil
        }
        let conflicting = changes.filter { conflicts($0.t, $0.id) }
        let conflictSet = Set(conflicting.map { $0.t * 1000 + $0.id })
        if policy == .failOnConflict && !conflicting.isEmpty {
            do {
                try storeOf(parent).merge(child.store, policy: policy)
            } catch let e as LogStoreError where e.code == .mergeConflict {
                guard e.conflicts.count == conflicting.count else {
                    throw fail("mergeConflict lists \(e.conflicts.count) items, the model has \(conflicting.count) conflicts")
                }
                return
            }
            throw fail(
                "merge with failOnConflict succeeded, the model has \(conflicting.count) conflicts: \(conflicting.map { "\(StoreScript.typeName($0.t))\($0.id)" })"
            )
        }
        try storeOf(parent).merge(child.store, policy: policy)
        if parent != 0, var p = children[parent] {
            for c in changes where !(policy == .parentWins && conflictSet.contains(c.t * 1000 + c.id)) {
                Self.record(c.value.map { .insert(type: c.t, id: c.id, value: $0) } ?? .delete(type: c.t, id: c.id), in: &p)
            }
            children[parent] = p
        } else if !changes.isEmpty {
            clock += 1
            for c in changes where !(policy == .parentWins && conflictSet.contains(c.t * 1000 + c.id)) {
                if let v = c.value {
                    contents[c.t, default: [:]][c.id] = v
                    lastPut[c.t, default: [:]][c.id] = clock
                } else {
                    contents[c.t]?[c.id] = nil
                }
            }
            contents = contents.filter { !$0.value.isEmpty }
        }
        children[slot] = Child(store: child.store, parent: parent, base: viewOf(parent), baseClock: clock)
    }

    // MARK: Checks

    func checkAll() throws {
        try checkStore(root, "root", [0: contents[0] ?? [:], 1: contents[1] ?? [:]])
        for (slot, c) in children.sorted(by: { $0.key < $1.key }) {
            try checkStore(c.store, "child \(slot)", [0: c.view(0), 1: c.view(1)])
        }
    }

    func checkStore(_ store: any DataStore, _ name: String, _ expected: Contents) throws {
        let (a, b, countA, countB) = try store.read { r in
            (
                try readAll(ScriptItemA.self, r), try readAll(ScriptItemB.self, r),
                try r.countItems(forRequest: DataStoreRequest(itemType: ScriptItemA.self)),
                try r.countItems(forRequest: DataStoreRequest(itemType: ScriptItemB.self))
            )
        }
        for (t, got, count) in [(0, a, countA), (1, b, countB)] {
            let want = expected[t] ?? [:]
            guard got == want else { throw fail("\(name) \(StoreScript.typeName(t)): store \(sorted(got)), model \(sorted(want))") }
            guard count == want.count else { throw fail("\(name) \(StoreScript.typeName(t)): countItems \(count), model \(want.count)") }
        }
    }

    func sorted(_ d: [Int: Int]) -> String { d.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") }

    /// Every item of a type as n -> value, checking ascending id order and item integrity.
    func readAll<I: ScriptItem>(_ type: I.Type, _ r: any DataStoreReadAccessor) throws -> [Int: Int] {
        let items = try r.items(forRequest: DataStoreRequest(itemType: I.self))
        var out: [Int: Int] = [:]
        for i in items {
            guard i == I(n: i.n, value: i.value) else { throw fail("item \(i) is not what any insert wrote") }
            out[i.n] = i.value
        }
        guard items.map(\.n) == I.idOrder(Array(out.keys)), out.count == items.count else {
            throw fail("\(I.itemType) items are not in ascending id order (or repeat): \(items.map(\.n))")
        }
        return out
    }

    /// Runs one request shape against a store and compares it with the model's answer.
    func checkRead<I: ScriptItem>(_ type: I.Type, _ store: any DataStore, _ model: [Int: Int], query: Int, argument: Int) throws {
        let byId = I.idOrder(Array(model.keys))
        let offset = argument % 5
        let limit = argument / 5 % 6
        switch query % 6 {
        case 0:
            // Sort by value descending (ties by id), offset and limit.
            var req = DataStoreRequest(itemType: I.self)
            req.sortDescriptors = [SortDescriptor(\I.value, order: .reverse)]
            req.offset = offset
            req.limit = limit
            let got = try store.read { try $0.items(forRequest: req) }.map(\.n)
            let all = byId.sorted {
                model[$0]! > model[$1]! || (model[$0]! == model[$1]! && byId.firstIndex(of: $0)! < byId.firstIndex(of: $1)!)
            }
            let want = Array(all.dropFirst(offset).prefix(limit))
            guard got == want else { throw fail("sorted read \(I.itemType) offset \(offset) limit \(limit): store \(got), model \(want)") }
        case 1:
            // A predicate with a limit (key order).
            let threshold = argument
            var req = DataStoreRequest(itemType: I.self)
            req.predicate = I.valueAtLeast(threshold)
            req.limit = limit
            let got = try store.read { try $0.items(forRequest: req) }.map(\.n)
            let want = Array(byId.filter { model[$0]! >= threshold }.prefix(limit))
            guard got == want else {
                throw fail("predicate read \(I.itemType) value >= \(threshold) limit \(limit): store \(got), model \(want)")
            }
            let count = try store.read { try $0.countItems(forRequest: req) }
            let wantCount = model.values.filter { $0 >= threshold }.count
            guard count == wantCount else { throw fail("predicate count \(I.itemType): store \(count), model \(wantCount)") }
        case 2:
            // Attribute filter and attribute sort.
            let tag = "t\(argument % 3)"
            var req = DataStoreRequest(itemType: I.self)
            req.setFilter(whereAttribute: "tag", equalsValue: tag)
            req.setSort(whereAttribute: "value", ascending: true)
            req.offset = offset % 2
            let got = try store.read { try $0.items(forRequest: req) }.map(\.n)
            let want = Array(
                byId.filter { "t\(model[$0]! % 3)" == tag }.sorted {
                    model[$0]! < model[$1]! || (model[$0]! == model[$1]! && byId.firstIndex(of: $0)! < byId.firstIndex(of: $1)!)
                }.dropFirst(offset % 2))
            guard got == want else { throw fail("filtered read \(I.itemType) tag \(tag): store \(got), model \(want)") }
        case 3:
            // Point read.
            let n = argument % StoreScript.idRange
            let got = try store.read { try $0.item(ofType: I.self, id: I(n: n, value: 0).id) }
            guard got?.value == model[n], got.map(\.n) == model[n].map({ _ in n }) else {
                throw fail(
                    "item(ofType:id:) \(I.itemType)\(n): store \(String(describing: got?.value)), model \(String(describing: model[n]))")
            }
        case 4:
            // firstItem with offset (key order).
            var req = DataStoreRequest(itemType: I.self)
            req.offset = offset
            let got = try store.read { try $0.firstItem(forRequest: req) }?.n
            let want = byId.dropFirst(offset).first
            guard got == want else {
                throw fail("firstItem \(I.itemType) offset \(offset): store \(String(describing: got)), model \(String(describing: want))")
            }
        default:
            // Offset and limit in key order.
            var req = DataStoreRequest(itemType: I.self)
            req.offset = offset
            req.limit = limit
            let got = try store.read { try $0.items(forRequest: req) }.map(\.n)
            let want = Array(byId.dropFirst(offset).prefix(limit))
            guard got == want else { throw fail("paged read \(I.itemType) offset \(offset) limit \(limit): store \(got), model \(want)") }
        }
    }
}

/// What the checker needs of its two item types.
public protocol ScriptItem: DataStoreItem, Equatable {
    /// An item with number `n` and `value`.
    init(n: Int, value: Int)
    /// The item's number (its id, decoded).
    var n: Int { get }
    /// The value.
    var value: Int { get }
    /// Numbers in the type's ascending id order.
    static func idOrder(_ ns: [Int]) -> [Int]
    /// `value >= x`.
    static func valueAtLeast(_ x: Int) -> Predicate<Self>
}

extension ScriptItemA: ScriptItem {
    /// The id.
    public var n: Int { id }
    /// Numeric order.
    public static func idOrder(_ ns: [Int]) -> [Int] { ns.sorted() }
    /// `value >= x`.
    public static func valueAtLeast(_ x: Int) -> Predicate<ScriptItemA> { #Predicate<ScriptItemA> { $0.value >= x } }
}

extension ScriptItemB: ScriptItem {
    /// The number in `k<n>` (-1 if malformed).
    public var n: Int { Int(id.dropFirst()) ?? -1 }
    /// Byte order of `k<n>`.
    public static func idOrder(_ ns: [Int]) -> [Int] { ns.sorted { Array("k\($0)".utf8).lexicographicallyPrecedes(Array("k\($1)".utf8)) } }
    /// `value >= x`.
    public static func valueAtLeast(_ x: Int) -> Predicate<ScriptItemB> { #Predicate<ScriptItemB> { $0.value >= x } }
}
