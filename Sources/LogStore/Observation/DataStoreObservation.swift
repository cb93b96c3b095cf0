/// A live query: an `AsyncSequence` whose first element is the observed value at a snapshot and
/// whose later elements follow the store's commits (``DataStore/observe(_:)``,
/// ``DataStore/observeItem(ofType:id:)``, ``DataStore/observeCount(_:)``).
///
/// Each iteration (each `makeAsyncIterator()`, each `for try await` loop) is an observation of its
/// own, with its own first fetch. The delivery rules are in the "Observing Changes" article:
/// in short, no commit is missed between the first element and the next, commits that change
/// nothing observed produce no element, commits arriving while the consumer is busy coalesce into
/// one element, and the work runs on the observation's own queue, never on the writer's thread
/// nor the consumer's actor.
///
/// Ending: the iteration completes when the consumer's task is cancelled, when it stops iterating
/// (the iterator is released), and when the store is torn down; it throws when the store can no
/// longer commit (`.storePoisoned`, `.parentClosed`), when the store was not set up (`.notOpen`), or
/// when a read fails (`.decodingFailed`, `.corruption`, the predicate's own error).
///
/// `Sendable`: create it anywhere and iterate it from any task or actor; elements are `Sendable`.
public struct DataStoreObservation<Element: Sendable>: AsyncSequence, Sendable {
    /// Errors: `LogStoreError`, or the error a request's predicate threw.
    public typealias Failure = any Error

    let start: @Sendable () -> any ObservationDriver<Element>

    init(start: @escaping @Sendable () -> any ObservationDriver<Element>) { self.start = start }

    /// Starts an observation: subscribes to the store's commits and begins the first fetch on the
    /// observation's queue. Never blocks.
    public func makeAsyncIterator() -> Iterator { Iterator(Handle(start())) }

    /// Ends its observation when the last copy of its iterator is released.
    final class Handle: Sendable {
        let driver: any ObservationDriver<Element>
        init(_ driver: any ObservationDriver<Element>) { self.driver = driver }
        deinit { driver.cancel() }
    }

    /// The iterator of one observation. Use it from one task at a time (a second `next()` while
    /// one waits throws `.invalidArgument`).
    public struct Iterator: AsyncIteratorProtocol {
        let handle: Handle

        init(_ handle: Handle) { self.handle = handle }

        /// The next element, once the observed value differs from the last element's; nil once the
        /// observation completed. Suspends without blocking a thread; resumes on the caller's
        /// actor (the main actor for UI code) with the element computed off it. Cancelling the
        /// calling task completes the observation. Throws as described on ``DataStoreObservation``.
        public mutating func next() async throws -> Element? {
            try await handle.driver.next(isolation: nil)
        }

        /// See ``next()``: resumes on `actor`.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> Element? {
            try await handle.driver.next(isolation: actor)
        }

        /// Test support: returns once every commit published so far has been applied (no element is
        /// delivered by this).
        package func _settle() async { await handle.driver.settle() }
        /// Test support: whether an element is ready for the next `next()`.
        package var _hasPendingElement: Bool { handle.driver.hasPendingElement }
        /// Test support: whether the observation has ended (a `next()` returns nil or throws).
        package var _isFinished: Bool { handle.driver.isFinished }
        /// Test support: elements handed out so far.
        package var _elementsDelivered: Int { handle.driver.elementsDelivered }
    }
}
