public import Foundation
public import LogStore
import Synchronization

/// One failed expectation of a case: what went wrong and where in the suite.
public struct ConformanceFailure: Error, Sendable, CustomStringConvertible {
    /// The case's name.
    public var caseName: String
    /// The factory's name.
    public var backend: String
    /// What was expected and what happened.
    public var message: String
    /// The suite's source location of the expectation (`#fileID`, `#filePath`, `#line`).
    public var fileID: String
    /// See ``fileID``.
    public var filePath: String
    /// See ``fileID``.
    public var line: Int

    /// `[backend] case: message (file:line)`.
    public var description: String { "[\(backend)] \(caseName): \(message) (\(fileID):\(line))" }
}

/// What a case sees: its backend's locations and stores, and expectations that report failures
/// (a failed expectation does not stop the case; a thrown error does, and is reported).
///
/// Thread-safe: a case may check expectations from the threads it starts.
public final class ConformanceContext: Sendable {
    /// The factory under test.
    public let factory: any DataStoreFactory
    /// The case being run.
    public let caseName: String
    let reporter: @Sendable (ConformanceFailure) -> Void
    let locations = Mutex<[any DataStoreLocation]>([])
    let failures = Atomic<Int>(0)

    init(factory: any DataStoreFactory, caseName: String, report: @escaping @Sendable (ConformanceFailure) -> Void) {
        self.factory = factory
        self.caseName = caseName
        reporter = report
    }

    /// The backend's capabilities.
    public var capabilities: DataStoreCapabilities { factory.capabilities }

    // MARK: Stores

    /// A new location, destroyed when the case ends.
    public func makeLocation() throws -> any DataStoreLocation {
        let l = try factory.makeLocation()
        locations.withLock { $0.append(l) }
        return l
    }

    /// A store on a new location, set up.
    public func openStore() throws -> any DataStore {
        let store = try makeLocation().makeStore()
        try store.setup()
        return store
    }

    /// Destroys every location the case made (the runner calls it).
    func cleanUp() {
        let all = locations.withLock { l -> [any DataStoreLocation] in
            defer { l = [] }
            return l
        }
        for l in all.reversed() { l.destroy() }
    }

    // MARK: Expectations

    /// Reports a failure.
    public func fail(_ message: String, fileID: String = #fileID, filePath: String = #filePath, line: Int = #line) {
        failures.add(1, ordering: .relaxed)
        reporter(
            ConformanceFailure(caseName: caseName, backend: factory.name, message: message, fileID: fileID, filePath: filePath, line: line))
    }

    /// Reports a failure unless `condition` holds.
    public func expect(
        _ condition: Bool, _ message: @autoclosure () -> String,
        fileID: String = #fileID, filePath: String = #filePath, line: Int = #line
    ) {
        if !condition { fail(message(), fileID: fileID, filePath: filePath, line: line) }
    }

    /// Reports a failure unless `actual == expected`.
    public func expectEqual<T: Equatable>(
        _ actual: T, _ expected: T, _ message: @autoclosure () -> String = "",
        fileID: String = #fileID, filePath: String = #filePath, line: Int = #line
    ) {
        if actual != expected {
            let m = message()
            fail("\(m.isEmpty ? "" : m + ": ")got \(actual), expected \(expected)", fileID: fileID, filePath: filePath, line: line)
        }
    }

    /// Runs `body` and reports a failure unless it throws a `LogStoreError` with `code`.
    public func expectThrows<T>(
        _ code: LogStoreError.Code, _ what: @autoclosure () -> String = "",
        fileID: String = #fileID, filePath: String = #filePath, line: Int = #line, _ body: () throws -> T
    ) {
        do {
            _ = try body()
            fail("\(what()) expected LogStoreError \(code), nothing was thrown", fileID: fileID, filePath: filePath, line: line)
        } catch let e as LogStoreError {
            if e.code != code { fail("\(what()) expected LogStoreError \(code), got \(e)", fileID: fileID, filePath: filePath, line: line) }
        } catch {
            fail("\(what()) expected LogStoreError \(code), got \(error)", fileID: fileID, filePath: filePath, line: line)
        }
    }

    /// Runs `body` and reports a failure unless it throws an error equal to `expected`.
    public func expectThrows<E: Error & Equatable, T>(
        _ expected: E, fileID: String = #fileID, filePath: String = #filePath, line: Int = #line,
        _ body: () throws -> T
    ) {
        do {
            _ = try body()
            fail("expected \(expected) to be thrown, nothing was", fileID: fileID, filePath: filePath, line: line)
        } catch let e as E where e == expected {
        } catch {
            fail("expected \(expected) to be thrown unchanged, got \(error)", fileID: fileID, filePath: filePath, line: line)
        }
    }

    /// Waits up to `seconds` for `semaphore`; reports a failure ("deadlock?") and returns false if
    /// it does not come.
    @discardableResult
    public func wait(
        _ semaphore: DispatchSemaphore, _ what: String, seconds: Double = 60,
        fileID: String = #fileID, filePath: String = #filePath, line: Int = #line
    ) -> Bool {
        if semaphore.wait(timeout: .now() + seconds) == .success { return true }
        fail("timed out after \(seconds) s waiting for \(what) (a deadlock?)", fileID: fileID, filePath: filePath, line: line)
        return false
    }

    /// Waits up to `seconds` for `group`; reports a failure and returns false if it does not finish.
    @discardableResult
    public func wait(
        _ group: DispatchGroup, _ what: String, seconds: Double = 60,
        fileID: String = #fileID, filePath: String = #filePath, line: Int = #line
    ) -> Bool {
        if group.wait(timeout: .now() + seconds) == .success { return true }
        fail("timed out after \(seconds) s waiting for \(what) (a deadlock?)", fileID: fileID, filePath: filePath, line: line)
        return false
    }

    /// Ends the case without failing it: the backend does not offer what it needs. Throw the
    /// result: `throw context.skip("...")`.
    public func skip(_ why: String) -> ConformanceSkip { ConformanceSkip(reason: why) }
}

/// Thrown by a case that does not apply to the backend (see ``ConformanceContext/skip(_:)``).
public struct ConformanceSkip: Error, Sendable {
    /// Why.
    public var reason: String
}

/// A value that can be set from any thread (for results computed on threads a case starts).
public final class SharedBox<Value: Sendable>: Sendable {
    let storage: Mutex<Value>
    /// A box holding `value`.
    public init(_ value: Value) { storage = Mutex(value) }
    /// The current value.
    public var value: Value {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
    /// Changes the value in place, atomically.
    public func update(_ body: (inout Value) -> Void) { storage.withLock { body(&$0) } }
}

/// An identifier of the calling thread.
func currentThreadID() -> UInt {
    #if canImport(Glibc)
        return UInt(pthread_self())
    #else
        return UInt(bitPattern: pthread_self())
    #endif
}
