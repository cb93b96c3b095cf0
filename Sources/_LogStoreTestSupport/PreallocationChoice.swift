import LogStoreEngine

/// The options of a power-loss run's current store: every new store draws whether it preallocates
/// its tail (zeros written and synced ahead of the appends, on the committing thread so a seed
/// decides the run) or grows it with every commit, so one run covers both kinds of tail.
///
/// Shared by the harness (which draws at each new store) and its interpreter factory (which opens
/// with the current options). `Sendable`: the current options are behind a mutex.
final class PreallocationChoice: Sendable {
    /// The configuration's options; their `preallocationSize` is what preallocating stores use.
    let base: LogEngineOptions
    private let current: Protected<LogEngineOptions>

    init(_ base: LogEngineOptions) {
        self.base = base
        current = Protected(base)
    }

    /// The current store's options.
    var options: LogEngineOptions { current.withLock { $0 } }

    /// Draws the next store's tail kind (when the configuration preallocates at all and commits
    /// sync); returns a word for the event log.
    func draw(_ rng: inout SplitMix64) -> String {
        guard base.preallocationSize > 0, base.durability != .none else { return "growing tail" }
        let preallocate = rng.chance(0.5)
        current.withLock { $0.preallocationSize = preallocate ? base.preallocationSize : 0 }
        return preallocate ? "preallocated tail" : "growing tail"
    }
}
