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
    /// Live records moved into the new segments: copied byte for byte (format 4 records: no
    /// decompression, recompression or new checksum), or re-encoded (``recordsReencoded``).
    public var recordsCopied = 0
    /// Of ``recordsCopied``, the records of version 1 or 2 segments (a store upgraded from an
    /// older format), encoded once as format 4 records.
    public var recordsReencoded = 0
    /// Define records (item types, dictionaries) written into the new segments.
    public var definesWritten = 0
    /// A recompression pass (``LogEngine/recompress(includingTail:)``): records re-encoded
    /// because they compress better than they were stored, and the bytes they took before and
    /// after.
    public var recordsRecompressed = 0
    /// See ``recordsRecompressed``.
    public var recompressedBytesBefore: UInt64 = 0
    /// See ``recordsRecompressed``.
    public var recompressedBytesAfter: UInt64 = 0
    /// A recompression pass: new dictionaries trained and written.
    public var dictionariesTrained = 0
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
