import Foundation
import LogStore
import LogStoreEngine
import PropertyBased
import Testing
import _LogStoreTestSupport

/// Property-based tests: random operation sequences on the DataStore API (and crash scripts on the
/// engine) checked against a dictionary model after every step (Docs/Testing.md, "Property
/// tests"). The model and interpreter are `_LogStoreTestSupport`'s `DataStoreModelChecker` and
/// `EngineCrashScriptChecker`, the same ones the `fuzz-ops` fuzz target drives.
///
/// Each operation is generated as a few random bytes (`StoreScript.parseOne` turns them into an
/// insert/replace, delete, delete-all, a read with a request, a child store, a merge with one of
/// the three policies, a reset of a child, a reopen or a nuke). On a failure PropertyBased shrinks
/// the sequence (dropping operations, lowering bytes toward simpler operations) and prints the
/// minimal failing sequence and a `.fixedSeed(...)` trait that reproduces it.
@Suite struct ModelPropertyTests {
    /// One DataStore operation from 1-10 random bytes.
    static let operation = Gen<UInt8>.value().array(of: 1...10).map { bytes -> StoreScriptOperation in
        var r = StoreScript.Reader(bytes)
        return StoreScript.parseOne(&r)
    }

    /// One operation on child stores: writes to any store, child stores of the root and of other
    /// children, merges with each policy, resets (the first byte picks among those kinds only;
    /// the other bytes are small, so that stores write the same few items and merges conflict).
    static let childOperation = zip(
        Gen.element(of: [0, 1, 2, 5, 8, 8, 9, 10, 11, 12] as [UInt8]),
        Gen<UInt8>.value(in: 0...11).array(of: 1...9)
    ).map { kind, rest -> StoreScriptOperation in
        var r = StoreScript.Reader([kind ?? 0] + rest)
        return StoreScript.parseOne(&r)
    }

    /// One crash-script step from 1-14 random bytes.
    static let crashStep = Gen<UInt8>.value().array(of: 1...14).map { bytes -> EngineCrashScriptOperation in
        var r = StoreScript.Reader(bytes)
        return EngineCrashScript.parseOne(&r)
    }

    static func check(
        _ mode: LogDataStoreFactory.Mode, options: LogStoreOptions = LogStoreOptions(),
        _ ops: [StoreScriptOperation]
    ) {
        do {
            let factory = LogDataStoreFactory(mode, options: options)
            let location = try factory.makeLocation()
            defer { location.destroy() }
            let checker = try DataStoreModelChecker(location: location, capabilities: factory.capabilities)
            defer { checker.finish() }
            try checker.run(ops)
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test(.shrinking)
    func randomOperationSequencesOnAnInMemoryStoreMatchTheModel() async {
        await propertyCheck(count: 120, input: Self.operation.array(of: 1...40)) { ops in
            Self.check(.memory, ops)
        }
    }

    @Test(.shrinking)
    func randomOperationSequencesWithSpillingChildStoresMatchTheModel() async {
        var options = LogStoreOptions()
        options.childSpillThreshold = 64
        let o = options
        await propertyCheck(count: 60, input: Self.operation.array(of: 1...40)) { ops in
            Self.check(.memory, options: o, ops)
        }
    }

    @Test(.shrinking)
    func randomChildStoreTreesWithMergesMatchTheModel() async {
        await propertyCheck(count: 100, input: Self.childOperation.array(of: 1...40)) { ops in
            Self.check(.memory, ops)
        }
    }

    @Test(.shrinking)
    func randomOperationSequencesOnADiskStoreWithReopensMatchTheModel() async {
        await propertyCheck(count: 40, input: Self.operation.array(of: 1...30)) { ops in
            var options = LogStoreOptions()
            options.durability = .buffered
            Self.check(.disk, options: options, ops)
        }
    }

    @Test(.shrinking)
    func randomCrashScriptsRecoverToACommittedPrefix() async {
        await propertyCheck(count: 80, input: Self.crashStep.array(of: 1...30)) { steps in
            do {
                var options = LogEngineOptions()
                options.segmentSize = 64 << 10
                let checker = try EngineCrashScriptChecker(options: options)
                defer { checker.finish() }
                try checker.run(steps)
            } catch {
                Issue.record("\(error)")
            }
        }
    }
}
