import LogStoreCommandSupport
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
    /// Runs the recompression pass on the store of `engine` (`compact --recompress`). Runs on the
    /// calling thread; throws what the engine throws.
    func recompress(_ engine: LogEngine) throws -> CompactionOutcome
}

extension CompactionBackend {
    /// See ``CompactionBackend/recompress(_:)``: a backend that cannot recompress compacts.
    func recompress(_ engine: LogEngine) throws -> CompactionOutcome { try compact(engine) }
}

/// What a backend says it did, beyond the sizes the command measures itself.
struct CompactionOutcome: Sendable {
    /// Extra lines for the text output and members for the JSON output (`"engine": {...}`).
    var details: [(String, String)] = []
}

/// The engine's own compaction: `LogEngine.compact()` rewrites every live record (the tail is
/// sealed first) into new compacted segments and switches the manifest atomically; the replaced
/// segment files are deleted once nothing reads them.
struct EngineCompaction: CompactionBackend {
    var isAvailable: Bool { true }

    func compact(_ engine: LogEngine) throws -> CompactionOutcome { Self.outcome(try engine.compact()) }

    func recompress(_ engine: LogEngine) throws -> CompactionOutcome {
        let r = try engine.recompress()
        var outcome = Self.outcome(r)
        outcome.details += [
            ("recordsRecompressed", String(r.recordsRecompressed)), ("recompressedBytesBefore", String(r.recompressedBytesBefore)),
            ("recompressedBytesAfter", String(r.recompressedBytesAfter)), ("dictionariesTrained", String(r.dictionariesTrained)),
        ]
        return outcome
    }

    static func outcome(_ r: CompactionReport) -> CompactionOutcome {
        var details: [(String, String)] = [("performed", r.performed ? "true" : "false")]
        if let why = r.skippedReason { details.append(("skipped", why)) }
        details.append(("replacedSegments", r.replacedSegments.map(String.init).joined(separator: ",")))
        details.append(("newSegments", r.newSegments.map(String.init).joined(separator: ",")))
        details.append(("recordsCopied", String(r.recordsCopied)))
        details.append(("checkpointWritten", r.checkpointWritten ? "true" : "false"))
        return CompactionOutcome(details: details)
    }
}

/// The backend `compact` uses on this task or thread (tests substitute a fake).
enum CompactionBackends {
    @TaskLocal static var current: any CompactionBackend = EngineCompaction()
}

extension ToolFailure {
    /// In-place compaction is not available in this build (a backend that cannot compact).
    static let compactionUnavailable = ToolFailure(
        .unavailable,
        "In-place compaction is not available in this build. Use `compact --dry-run` to see what it would reclaim, or `compact --into <new-dir>` to write a compacted copy."
    )
}
