/// When background compaction may try again after failing for lack of space: a compaction
/// needs room for its output before it frees anything, so on a full disk every roll-over would
/// otherwise start one that fails. Each failure doubles the wait (1 s, 2 s, ... up to 5 minutes);
/// a success resets it. A value type kept under the engine's lock; any thread.
struct DiskFullBackoff: Sendable, Equatable {
    /// No compaction starts before this instant.
    private(set) var notBefore: ContinuousClock.Instant? = nil
    /// The wait after the next failure.
    private(set) var nextWait: Duration = .seconds(1)

    static let longestWait: Duration = .seconds(300)

    /// Whether a compaction may start at `now`.
    func allows(_ now: ContinuousClock.Instant) -> Bool { notBefore.map { now >= $0 } ?? true }

    /// Records a failure for lack of space at `now`; returns how long compaction now waits.
    mutating func failed(at now: ContinuousClock.Instant) -> Duration {
        let wait = nextWait
        notBefore = now + wait
        nextWait = min(wait * 2, Self.longestWait)
        return wait
    }

    /// Records a compaction that did not fail for lack of space.
    mutating func succeeded() { self = DiskFullBackoff() }
}
