import LogStoreEngine

/// What in-place `compact` asks of the engine: rewrite the open store's live records into new
/// segments and switch the manifest to them atomically (never overwriting a byte of an existing
/// segment). A seam so the command is written and tested before the engine API exists.
protocol CompactionBackend: Sendable {
    /// Whether this build can compact in place; checked before the store is opened so that an
    /// unavailable compaction leaves the store untouched.
    var isAvailable: Bool { get }
    /// Compacts the store of `engine` (opened by the command, holding the lock). Runs on the
    /// calling thread; throws what the engine throws.
    func compact(_ engine: LogEngine) throws -> CompactionOutcome
}

/// What a backend says it did, beyond the sizes the command measures itself.
struct CompactionOutcome: Sendable {
    /// Extra lines for the text output and members for the JSON output (`"engine": {...}`).
    var details: [(String, String)] = []
}

/// The engine's own compaction.
///
/// TODO(compaction): the engine branch adds `LogEngine.compact() throws -> CompactionReport`.
/// When it lands: set `isAvailable` to true, call `engine.compact()` in `compact(_:)` and copy the
/// report's fields into `details`. Until then in-place compaction exits 6 (unavailable) without
/// touching the store; `compact --dry-run` and `compact --into <dir>` work.
struct EngineCompaction: CompactionBackend {
    var isAvailable: Bool { false }

    func compact(_ engine: LogEngine) throws -> CompactionOutcome {
        throw ToolFailure.compactionUnavailable
    }
}

extension ToolFailure {
    static let compactionUnavailable = ToolFailure(
        .unavailable,
        "In-place compaction needs LogEngine.compact(), which this build of LogStore does not have yet. Use `compact --dry-run` to see what it would reclaim, or `compact --into <new-dir>` to write a compacted copy.")
}

/// The backend `compact` uses on this task or thread (tests substitute a fake).
enum CompactionBackends {
    @TaskLocal static var current: any CompactionBackend = EngineCompaction()
}
