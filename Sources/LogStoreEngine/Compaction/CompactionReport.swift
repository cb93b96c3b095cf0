import Foundation
import Logging

/// What one compaction did.
public struct CompactionReport: Sendable, Equatable {
    /// Whether a new generation was written. False when there was nothing to compact (see
    /// ``skippedReason``).
    public var performed: Bool = false
    /// Why nothing was done, when ``performed`` is false.
    public var skippedReason: String? = nil
    /// The segments that were replaced (a prefix of the replay order). Their files are deleted
    /// once no snapshot reads them any more.
    public var replacedSegments: [UInt32] = []
    /// The compacted segments that replaced them.
    public var newSegments: [UInt32] = []
    /// Bytes of the replaced segments.
    public var bytesBefore: UInt64 = 0
    /// Bytes of the new segments.
    public var bytesAfter: UInt64 = 0
    /// Live records copied.
    public var recordsCopied = 0
    /// Frames whose records were all live, copied as they were (no decompression, recompression
    /// or new checksum).
    public var framesCopied = 0
    /// Frames that also held dead records: their live records were re-packed into new frames.
    public var framesRepacked = 0
    /// The manifest generation after the switch.
    public var generation: UInt64 = 0
    /// Whether the checkpoint written after the switch succeeded (if not, the next open replays
    /// the whole log; nothing is lost).
    public var checkpointWritten = false
    /// Wall time the compaction took.
    public var duration: Duration = .zero
    /// How long writers were blocked by the switch (manifest write and re-pointing the index).
    public var writersBlocked: Duration = .zero
}
