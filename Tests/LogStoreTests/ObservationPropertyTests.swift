import DataStoreConformance
import Foundation
import LogStore
import PropertyBased
import Testing

/// The observation property test (Docs/Testing.md, "Observation property test"): random
/// scripts (writes, delete-alls, nukes, throwing blocks that roll back, child stores, merges with
/// each policy, resets, reopens) against random observers of requests, items and counts on the
/// root and on child stores. After every step each observer's last element equals a fresh fetch,
/// the differences applied one after another reproduce it, and a step that changes nothing it
/// observes produces no element (`ObservationChecker`).
@Suite struct ObservationPropertyTests {
    /// An observer, on the root half of the time (child slots are empty until a script fills them).
    static let observer = zip(
        Gen.element(of: [0, 0, 0, 1, 2, 3]), Gen<Int>.int(in: 0...1), Gen<Int>.int(in: 0...7), Gen<Int>.int(in: 0...255)
    ).map { ObserverSpec(slot: $0 ?? 0, type: $1, shape: $2, argument: $3) }

    /// Writes only (inserts, deletes, delete-alls; throwing blocks; nukes) on a few items with small
    /// values, so that windows fill, shift and empty often.
    static let write = zip(
        Gen.element(of: [0, 1, 2, 3, 12, 14] as [UInt8]),
        Gen<UInt8>.value(in: 0...15).array(of: 1...12)
    ).map { kind, rest -> StoreScriptOperation in
        var r = StoreScript.Reader([kind ?? 0, 0] + rest)
        return StoreScript.parseOne(&r)
    }

    static func check(
        _ mode: LogDataStoreFactory.Mode, options: LogStoreOptions = LogStoreOptions(),
        _ ops: [StoreScriptOperation], _ specs: [ObserverSpec]
    ) async -> (elements: Int, quiet: Int) {
        do {
            let factory = LogDataStoreFactory(mode, options: options)
            let location = try factory.makeLocation()
            defer { location.destroy() }
            let script = try DataStoreModelChecker(location: location, capabilities: factory.capabilities)
            let observers = ObservationChecker(specs: specs)
            defer {
                observers.finish()
                script.finish()
            }
            try await observers.check(stores: script.currentStores, steps: script.stepsRun)
            for op in ops {
                try script.run([op])
                try await observers.check(stores: script.currentStores, steps: script.stepsRun)
            }
            return (observers.elementsChecked, observers.quietChecks)
        } catch {
            Issue.record("observers \(specs)\n\(error)")
            return (0, 0)
        }
    }

    @Test(.shrinking)
    func observersOfRandomRequestsFollowRandomScriptsExactly() async {
        await propertyCheck(count: 100, input: ModelPropertyTests.operation.array(of: 1...40), Self.observer.array(of: 1...8)) {
            ops, specs in
            _ = await Self.check(.memory, ops, specs)
        }
    }

    @Test(.shrinking)
    func rootObserversFollowDenseWritesExactly() async {
        let root = zip(Gen<Int>.int(in: 0...1), Gen<Int>.int(in: 0...7), Gen<Int>.int(in: 0...15))
            .map { ObserverSpec(slot: 0, type: $0, shape: $1, argument: $2) }
        await propertyCheck(count: 150, input: Self.write.array(of: 1...40), root.array(of: 1...8)) { ops, specs in
            _ = await Self.check(.memory, ops, specs)
        }
    }

    @Test(.shrinking)
    func observersOfChildStoresFollowMergesAndResets() async {
        await propertyCheck(count: 80, input: ModelPropertyTests.childOperation.array(of: 1...40), Self.observer.array(of: 1...8)) {
            ops, specs in
            _ = await Self.check(.memory, ops, specs)
        }
    }

    @Test(.shrinking)
    func observersOfADiskStoreEndAtEachReopenAndStartAgain() async {
        await propertyCheck(count: 30, input: ModelPropertyTests.operation.array(of: 1...30), Self.observer.array(of: 1...6)) {
            ops, specs in
            var options = LogStoreOptions()
            options.durability = .buffered
            _ = await Self.check(.disk, options: options, ops, specs)
        }
    }

    /// The property runs exercise both outcomes: elements, and steps rightly without one.
    @Test func aFixedScriptExercisesElementsAndQuietSteps() async {
        let ops = StoreScript.parse(Array((0..<400).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }), limit: 60)
        let specs = (0..<8).map { ObserverSpec(slot: $0 % 4, type: $0 % 2, shape: $0, argument: $0 * 29) }
        let (elements, quiet) = await Self.check(.memory, ops, specs)
        #expect(elements > 20)
        #expect(quiet > 20)
    }
}
