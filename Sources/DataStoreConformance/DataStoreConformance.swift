import Foundation
import LogStore

/// The DataStore contract as executable checks, written once against `any DataStore` and run on
/// every backend: `LogDataStore` on disk, in memory and as a child store, the SQLite backend, and
/// any third-party backend.
///
/// The suite depends on no test framework: failures go to a closure. With swift-testing, one
/// test per case (each reported on its own):
///
/// ```swift
/// import DataStoreConformance
/// import Testing
///
/// @Test(arguments: DataStoreConformance.cases)
/// func conformance(_ check: ConformanceCase) async {
///     await check.run(on: MyStoreFactory()) { failure in
///         Issue.record(Comment(rawValue: failure.description),
///                      sourceLocation: SourceLocation(fileID: failure.fileID, filePath: failure.filePath, line: failure.line, column: 1))
///     }
/// }
/// ```
///
/// With XCTest: `await DataStoreConformance.run(DataStoreConformance.cases, on: MyStoreFactory()) { XCTFail($0.description) }`.
///
/// A factory (``DataStoreFactory``) makes empty places for stores and declares what the backend
/// offers (``DataStoreCapabilities``); cases that need more are skipped. The cases are grouped by
/// area, the area being the first part of their name: `concurrency`, `writes`, `lifecycle`,
/// `durability`, `requests`, `order`, `predicates`, `values`, `records`, `children`, `merge`,
/// `indexes`, `model`, `observation`, `changes`, `migrations`.
public enum DataStoreConformance {
    /// Every case, in a stable order.
    public static var cases: [ConformanceCase] {
        concurrencyCases + writeCases + lifecycleCases + requestCases + orderCases + predicateCases + valueCases
            + recordCases + childCases + mergeCases + indexCases + modelCases + observationCases + migrationCases
    }

    /// Runs `cases` on `factory` one after another, each with fresh locations (destroyed after
    /// it), and reports every failed expectation and unexpected error to `report` (from any
    /// thread). Returns the number of failures.
    @discardableResult
    public static func run(
        _ cases: [ConformanceCase], on factory: any DataStoreFactory,
        report: @escaping @Sendable (ConformanceFailure) -> Void
    ) async -> Int {
        var failures = 0
        for c in cases { failures += await c.run(on: factory, report: report) }
        return failures
    }
}

extension ConformanceCase {
    /// Runs this case on `factory` (skipped, returning 0, when the factory lacks what it
    /// requires) and reports failures to `report`. Returns the number of failures.
    @discardableResult
    public func run(on factory: any DataStoreFactory, report: @escaping @Sendable (ConformanceFailure) -> Void) async -> Int {
        guard factory.capabilities.isSuperset(of: requires) else { return 0 }
        let context = ConformanceContext(factory: factory, caseName: name, report: report)
        let outcome: (any Error)?
        switch body {
        case .async(let body):
            do {
                try await body(context)
                outcome = nil
            } catch {
                outcome = error
            }
        case .sync(let body):
            // A thread of its own: the case blocks (semaphores, writeSync) and must not hold one of
            // the cooperative pool's few threads while the store's async twins need them.
            outcome = await withCheckedContinuation { (done: CheckedContinuation<(any Error)?, Never>) in
                let thread = Thread {
                    do {
                        try body(context)
                        done.resume(returning: nil)
                    } catch {
                        done.resume(returning: error)
                    }
                }
                thread.stackSize = 8 << 20
                thread.start()
            }
        }
        if let outcome, !(outcome is ConformanceSkip) {
            context.fail("unexpected error: \(outcome)")
        }
        context.cleanUp()
        return context.failures.load(ordering: .relaxed)
    }
}
