import Foundation
public import LogStore

// Model-based checking of observation (Docs/Testing.md, "Observation property test"): observers
// of random requests, items and counts ride along a script run by `DataStoreModelChecker`; after
// every step each observer must hold exactly what a fresh fetch returns, its differences applied
// to the previous element must give the new ids, and a step that changes nothing it observes
// must produce no element (checked exactly: the observer is settled, then asked whether an
// element is pending). Written against `any DataStore`: the conformance suite's observation
// cases run it on every backend.

/// One observer of a script: which store slot it watches and what.
public struct ObserverSpec: Sendable, Hashable, CustomStringConvertible {
    /// The store slot (0: the root, 1-3: children; an empty slot is observed once it is filled).
    public var slot: Int
    /// The item type: 0 ScriptA, 1 ScriptB.
    public var type: Int
    /// What is observed (`shape % 8`): 0 every item, 1 a predicate, 2 a sort, 3 predicate + sort +
    /// limit, 4 offset + limit, 5 an attribute filter and sort, 6 one item, 7 a predicate's count.
    public var shape: Int
    /// The shape's parameter (threshold, id, offset and limit).
    public var argument: Int

    /// An observer spec.
    public init(slot: Int, type: Int, shape: Int, argument: Int) {
        self.slot = slot
        self.type = type
        self.shape = shape
        self.argument = argument
    }

    /// Short form, e.g. `@1 A shape3(17)`.
    public var description: String { "@\(slot) \(StoreScript.typeName(type)) shape\(shape % 8)(\(argument))" }
}

/// Runs observers of ``ObserverSpec``s beside a script and checks them after every step.
public final class ObservationChecker {
    let specs: [ObserverSpec]
    var observers: [Int: any CheckedObserver] = [:]
    /// Elements checked, over all observers (to see that the run exercised something).
    public private(set) var elementsChecked = 0
    /// Steps after which an observer rightly produced no element.
    public private(set) var quietChecks = 0

    /// A checker for `specs` (observers start at the first ``check(stores:steps:)``).
    public init(specs: [ObserverSpec]) { self.specs = specs }

    /// After a step: checks every observer against its store, ends those whose store went away
    /// (they must have completed or thrown `.parentClosed`/`.notOpen`), and starts observers for
    /// slots that have a store. Throws ``ModelViolation``.
    public func check(stores: [Int: any DataStore], steps: [String]) async throws {
        for (i, spec) in specs.enumerated() {
            if let o = observers[i], o.isFinished {
                try await o.checkEnded(steps)
                observers[i] = nil
            }
            guard let store = stores[spec.slot] else { continue }
            if observers[i] == nil { observers[i] = Self.makeObserver(spec, store) }
            guard let o = observers[i] else { continue }
            let element = try await o.check(steps)
            if element { elementsChecked += 1 } else { quietChecks += 1 }
        }
    }

    /// Ends every observer.
    public func finish() { observers = [:] }

    static func makeObserver(_ spec: ObserverSpec, _ store: any DataStore) -> any CheckedObserver {
        spec.type == 0 ? make(ScriptItemA.self, spec, store) : make(ScriptItemB.self, spec, store)
    }

    static func make<I: ScriptItem>(_ type: I.Type, _ spec: ObserverSpec, _ store: any DataStore) -> any CheckedObserver {
        let a = spec.argument
        var r = DataStoreRequest(itemType: I.self)
        switch spec.shape % 8 {
        case 0: break
        case 1: r.predicate = I.valueAtLeast(a % 256)
        case 2: r.sortDescriptors = [SortDescriptor(\I.value, order: .reverse)]
        case 3:
            r.predicate = I.valueAtLeast(a % 128)
            r.sortDescriptors = [SortDescriptor(\I.value)]
            r.limit = a % 5
        case 4:
            r.offset = a % 4
            r.limit = 1 + a % 5
        case 5:
            r.setFilter(whereAttribute: "tag", equalsValue: "t\(a % 3)")
            r.setSort(whereAttribute: "value", ascending: a % 2 == 0)
        case 6: return ItemObserverCheck<I>(store: store, spec: spec, id: I(n: a % StoreScript.idRange, value: 0).id)
        default:
            r.predicate = I.valueAtLeast(a % 256)
            return CountObserverCheck<I>(store: store, spec: spec, request: r)
        }
        return RequestObserverCheck<I>(store: store, spec: spec, request: r)
    }
}

/// One running observer and its oracle (a fresh fetch from its store).
protocol CheckedObserver: AnyObject {
    var isFinished: Bool { get }
    /// Settles the observer; if its store's fresh answer differs from the last element, takes the
    /// pending element and checks it (true); otherwise checks that none is pending (false).
    func check(_ steps: [String]) async throws -> Bool
    /// The store went away: the next `next()` must end the iteration.
    func checkEnded(_ steps: [String]) async throws
}

/// The shared part of the three observer checks.
class ObserverCheckBase<Element: Sendable> {
    let store: any DataStore
    let spec: ObserverSpec
    var iterator: DataStoreObservation<Element>.Iterator
    var expected = 0
    var lastSequence: UInt64? = nil

    init(store: any DataStore, spec: ObserverSpec, observation: DataStoreObservation<Element>) {
        self.store = store
        self.spec = spec
        iterator = observation.makeAsyncIterator()
    }

    var isFinished: Bool { iterator._isFinished }

    func fail(_ message: String, _ steps: [String]) -> ModelViolation {
        ModelViolation("observer \(spec): \(message)", steps: steps)
    }

    /// Settles and returns the pending element if `changed`, checking that one is pending exactly then.
    func settle(changed: Bool, _ steps: [String]) async throws -> Element? {
        await iterator._settle()
        let pending = iterator._hasPendingElement
        guard pending == changed else {
            throw fail(
                changed
                    ? "the observed value changed but no element is pending"
                    : "an element is pending but the observed value did not change", steps)
        }
        guard changed else { return nil }
        guard let element = try await iterator.next() else { throw fail("the observation ended while an element was pending", steps) }
        expected += 1
        guard iterator._elementsDelivered == expected else {
            throw fail("\(iterator._elementsDelivered) elements delivered, \(expected) expected", steps)
        }
        return element
    }

    func checkSequence(_ sequence: UInt64, _ steps: [String]) throws {
        if let last = lastSequence, sequence <= last { throw fail("element sequence \(sequence) is not after \(last)", steps) }
        lastSequence = sequence
    }

    func checkEnded(_ steps: [String]) async throws {
        do {
            if try await iterator.next() != nil { throw fail("an element arrived after the store was torn down", steps) }
        } catch let e as LogStoreError where e.code == .parentClosed || e.code == .notOpen {}
        if try await iterator.next() != nil { throw fail("the iteration went on after it ended", steps) }
    }
}

final class RequestObserverCheck<I: ScriptItem>: ObserverCheckBase<ObservedResults<I>>, CheckedObserver {
    let request: DataStoreRequest<I>
    var last: [I]? = nil

    init(store: any DataStore, spec: ObserverSpec, request: DataStoreRequest<I>) {
        self.request = request
        super.init(store: store, spec: spec, observation: store.observe(request))
    }

    func check(_ steps: [String]) async throws -> Bool {
        let r = request
        let fresh = try await store.read { try $0.items(forRequest: r) }
        guard let e = try await settle(changed: fresh != last, steps) else { return false }
        let got = Array(e.items)
        guard got == fresh else { throw fail("element \(got.map(\.n)) but a fresh fetch gives \(fresh.map(\.n))", steps) }
        guard e.isInitial == (last == nil) else { throw fail("isInitial is \(e.isInitial)", steps) }
        let before = (last ?? []).map(\.id)
        guard let applied = before.applying(e.difference), applied == fresh.map(\.id) else {
            throw fail("the difference \(e.difference) applied to \(before) does not give \(fresh.map(\.id))", steps)
        }
        var updated = Set<I.ID>()
        let old = Dictionary(uniqueKeysWithValues: (last ?? []).map { ($0.id, $0) })
        for item in fresh where old[item.id].map({ $0 != item }) ?? false { updated.insert(item.id) }
        guard Set(e.updatedIDs) == updated, e.updatedIDs.count == updated.count else {
            throw fail("updatedIDs \(e.updatedIDs), expected \(updated)", steps)
        }
        try checkSequence(e.sequence, steps)
        last = fresh
        return true
    }
}

final class ItemObserverCheck<I: ScriptItem>: ObserverCheckBase<ObservedItem<I>>, CheckedObserver {
    let id: I.ID
    var last: I?? = .none

    init(store: any DataStore, spec: ObserverSpec, id: I.ID) {
        self.id = id
        super.init(store: store, spec: spec, observation: store.observeItem(ofType: I.self, id: id))
    }

    func check(_ steps: [String]) async throws -> Bool {
        let id = self.id
        let fresh = try await store.read { try $0.item(ofType: I.self, id: id) }
        let changed: Bool
        if case .some(let l) = last { changed = l != fresh } else { changed = true }
        guard let e = try await settle(changed: changed, steps) else { return false }
        guard e.item == fresh else {
            throw fail("element \(String(describing: e.item)) but a fresh read gives \(String(describing: fresh))", steps)
        }
        try checkSequence(e.sequence, steps)
        last = .some(fresh)
        return true
    }
}

final class CountObserverCheck<I: ScriptItem>: ObserverCheckBase<ObservedCount>, CheckedObserver {
    let request: DataStoreRequest<I>
    var last: Int? = nil

    init(store: any DataStore, spec: ObserverSpec, request: DataStoreRequest<I>) {
        self.request = request
        super.init(store: store, spec: spec, observation: store.observeCount(request))
    }

    func check(_ steps: [String]) async throws -> Bool {
        let r = request
        let fresh = try await store.read { try $0.countItems(forRequest: r) }
        guard let e = try await settle(changed: fresh != last, steps) else { return false }
        guard e.count == fresh else { throw fail("count \(e.count) but a fresh count gives \(fresh)", steps) }
        try checkSequence(e.sequence, steps)
        last = fresh
        return true
    }
}
