/// The one reader of a segment's frames: recovery (``LogEngine/open(directory:fileSystem:options:)``,
/// strict and salvage), the store scanner behind `logstore-compact verify`, `stats` and
/// `compact --dry-run`, and the fuzz targets all walk a segment through it, so the rules below exist
/// once (as LevelDB's `log::Reader` serves recovery, repair and dump alike).
///
/// What it reads (Docs/FileFormat.md §6, §7a, §10), from `start` to the end of the buffer:
///
///     segment body := frame*
///     transaction  := data-frame* commit-frame      all with one sequence number (normal segments)
///                   | frame                         compacted segments: every frame stands alone
///                                                   (v2: commit or data, a frame copied unchanged
///                                                   from a normal segment keeps its kind; v1: commit)
///
/// Rules:
/// 1. A transaction is delivered (``read(_:from:compacted:isLast:lastSequence:onTransaction:onDamage:)``'s
///    `onTransaction`) once its commit frame is valid, never before; in a compacted segment every
///    valid frame is delivered alone.
/// 2. Sequence numbers: in a normal segment each transaction's is the last delivered one plus 1
///    (format v2: a gap is damage) or greater than it (v1); in a compacted segment each frame's is
///    at least the last one (several frames can share one: the frames of one transaction copied
///    unchanged, or a transaction's live records re-packed into several frames).
/// 3. Damage is a frame that is truncated or invalid (length, CRC, kind, flags), a data frame in a
///    version 1 compacted segment, a frame of another transaction inside an unfinished one, a
///    sequence number that breaks rule 2, or an unfinished transaction at the end.
/// 4. Damage in the **last** segment is a **torn tail** (unsynced bytes, cut and reported) when
///    nothing after it proves it durable. Format v2: no valid frame after it records a
///    `syncedThrough` beyond the damage's offset, so later whole transactions that were never
///    synced either (a group commit's batch, `.buffered` or `.none` writes whose sectors reached
///    the disk out of order) are cut with it. Format v1, which records no synced offset: no valid
///    frame of *another* transaction follows it (frames of the damaged transaction itself do not
///    count: a power loss during its `fdatasync` can keep its later sectors and lose an earlier
///    one). Every offset after the damage is tried, not only where its length field points,
///    because the length field may be what is damaged.
/// 5. Otherwise the damage is in data that was durable. The caller decides: stop (strict recovery
///    throws), or resume at the next valid frame of another transaction (salvage keeps every intact
///    transaction after it; the scanner keeps counting).
/// 6. Format v2, last segment: where the last complete transaction ends, zero bytes up to the end
///    of the file are **preallocated space** (the engine writes zeros ahead of its appends so that
///    commits overwrite allocated blocks): the log ends there, and nothing is damaged or cut. No
///    frame is all zeros (kind 0 is invalid), and a zero run followed by anything else is rule 3
///    damage as before.
///
/// Pure: reads only `buf`, runs on the calling thread, allocates only the pending frame list.
package struct SegmentReader {
    /// One frame of a transaction: its header and where it and its payload start in the buffer.
    package struct Frame {
        package var header: LogFrame.Header
        package var frameOffset: Int
        package var payloadOffset: Int

        /// The stored (possibly compressed) payload.
        package func storedPayload(in buf: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(rebasing: buf[payloadOffset..<(payloadOffset + header.storedLength)])
        }
    }

    /// Damage found in a segment (rule 3), with what rules 4 and 5 say about it.
    package struct Damage {
        /// Which rule-3 case it is.
        package enum Kind {
            /// A truncated or invalid frame.
            case frame
            /// A frame that is valid alone but breaks the transaction structure (a data frame in a
            /// compacted segment, another transaction's frame inside an unfinished one, an
            /// unfinished transaction at the end).
            case transaction
            /// A sequence number that breaks rule 2.
            case sequence
        }
        /// Which case it is.
        package var kind: Kind
        /// Buffer offset of the damaged frame (or of the first frame of the unfinished transaction).
        package var offset: Int
        /// Buffer offset where the last complete transaction before the damage ends.
        package var validEnd: Int
        /// What is wrong, for reports and errors.
        package var reason: String
        /// Rule 4: the last segment's interrupted append; nothing valid of another transaction follows.
        package var isTornTail: Bool
        /// Where the next valid frame of another transaction starts (rule 5), or nil if none does.
        package var resumeAt: Int?
        /// The sequence number of the unfinished transaction lost with the damage, if one was pending.
        package var lostTransaction: UInt64?
        /// For a torn tail: whole transactions after the damage that are cut with it (format v2:
        /// valid but never synced, so never acknowledged as durable in `.synchronous` mode).
        package var transactionsCut = 0
    }

    /// What the caller wants after damage that is not a torn tail.
    package enum DamageAction {
        /// Stop reading the segment (after a torn tail this is the only choice).
        case stop
        /// Continue at ``Damage/resumeAt`` (or stop at the end when nothing valid follows).
        case resume
    }

    /// How a read ended.
    package struct Outcome {
        /// Buffer offset where valid data ends: after the last delivered transaction, or (after a
        /// resume) the end of the buffer when nothing valid followed.
        package var validEnd: Int
        /// The torn tail that ended it, if one did.
        package var tornTail: Damage?
        /// With `endIsFileEnd == false`: the buffer ended inside a frame or a transaction, or met
        /// damage, which only the bytes after the buffer can decide; read again from ``validEnd``
        /// with more bytes (to the end of the file, at the latest).
        package var needsMore = false
        /// Rule 6: the buffer holds only zeros from ``validEnd`` to its end, after the last complete
        /// transaction of the last segment. With `endIsFileEnd` they are preallocated space that
        /// ends the log; otherwise they are, if the rest of the file is zeros too.
        package var zeroTail = false
    }

    /// Reads the frames of `buf` from `start` (just past the segment header, or where a checkpoint
    /// left off). `base` is the file offset of `buf[0]` (frames' `syncedThrough` are file offsets).
    /// `lastSequence` is the sequence of the last transaction before `start`; `lastIsExact` says
    /// whether the first transaction must follow it by exactly 1 (format v2), which is not the
    /// case when data before `start` was dropped (salvage, the scanner after damage).
    ///
    /// `onTransaction` gets each committed transaction's frames (commit frame last) and returns
    /// whether the transaction counts for rule 2 (false: the caller could not use it, for example its
    /// records do not decode; the sequence it would have set is not taken). `onDamage` gets each
    /// damage that is not a torn tail and says whether to resume; a torn tail always stops the read
    /// and is returned in ``Outcome/tornTail``. Either closure may throw to abort the read.
    package static func read(
        _ buf: UnsafeRawBufferPointer, from start: Int, base: Int = 0, version: UInt16, compacted: Bool, isLast: Bool,
        lastSequence: UInt64, lastIsExact: Bool = true, endIsFileEnd: Bool = true,
        onTransaction: ([Frame]) throws -> Bool,
        onDamage: (Damage) throws -> DamageAction
    ) throws -> Outcome {
        var offset = start
        var validEnd = start
        var last = lastSequence
        // Rule 2 in v2: exact succession, except right after data was dropped.
        var exact = version >= 2 && lastIsExact
        var pending: [Frame] = []

        /// Applies rules 4 and 5 to damage at `at`. `validFramesFrom`: a valid frame of another
        /// transaction there or later proves it is not a torn tail. `resumeFrom`: search for the
        /// resume point from here instead (to step over a valid frame that is itself the problem).
        /// Returns where to continue, or nil to stop.
        func damage(_ kind: Damage.Kind, _ at: Int, _ why: String, validFramesFrom: Int, resumeFrom: Int? = nil) throws -> Int? {
            // Rules 4 and 5 look at everything after the damage: only the whole rest of the file
            // can decide (the caller reads it and comes back).
            if !endIsFileEnd { throw NeedsMore() }
            let lost = pending.first?.header.sequence
            let torn = lost ?? last &+ 1
            let next = nextValidFrame(buf, from: validFramesFrom, version: version, compacted: compacted, skippingTransaction: torn)
            var d = Damage(
                kind: kind, offset: at, validEnd: validEnd, reason: why, isTornTail: false,
                resumeAt: nil, lostTransaction: lost)
            if isLast {
                if version >= 2 {
                    let later = laterFrames(buf, from: validFramesFrom, version: version, compacted: compacted)
                    // Everything from `validEnd` on is lost with the damage: vouched-for bytes there
                    // were durable.
                    d.isTornTail = later.syncedThrough <= UInt64(base + validEnd)
                    d.transactionsCut = later.commits
                } else {
                    d.isTornTail = next == nil
                }
            }
            if d.isTornTail { throw TornTail(damage: d) }
            d.resumeAt =
                resumeFrom.map { nextValidFrame(buf, from: $0, version: version, compacted: compacted, skippingTransaction: torn) } ?? next
            pending.removeAll()
            switch try onDamage(d) {
            case .stop:
                return nil
            case .resume:
                exact = false
                validEnd = d.resumeAt ?? buf.count
                return d.resumeAt
            }
        }

        /// Rule 6: only zeros from `offset` (a frame boundary, nothing pending) to the end.
        func zeroTail(at offset: Int) -> Bool {
            isLast && version >= 2 && pending.isEmpty && offset == validEnd && isZero(buf, from: offset)
        }

        do {
            scan: while offset < buf.count {
                let resume: Int?
                if buf[offset] == 0 && zeroTail(at: offset) {
                    return Outcome(validEnd: validEnd, tornTail: nil, needsMore: !endIsFileEnd, zeroTail: true)
                }
                switch LogFrame.parse(buf, at: offset, version: version, compacted: compacted) {
                case .truncated(let why):
                    resume = try damage(.frame, offset, "truncated frame: \(why)", validFramesFrom: offset + 1)
                case .invalid(let why):
                    resume = try damage(.frame, offset, "invalid frame: \(why)", validFramesFrom: offset + 1)
                case .frame(let header, let payloadOffset):
                    if compacted && version < 2 && header.kind != .commit {
                        resume = try damage(.transaction, offset, "data frame in a compacted segment", validFramesFrom: offset + 1)
                    } else if let first = pending.first, first.header.sequence != header.sequence {
                        // The unfinished transaction is dropped; this frame is examined again.
                        resume = try damage(
                            .transaction, offset,
                            "frame of transaction \(header.sequence) inside transaction \(first.header.sequence), which has no commit frame",
                            validFramesFrom: offset)
                    } else if pending.isEmpty
                        && (compacted ? header.sequence < last : exact ? header.sequence != last &+ 1 : header.sequence <= last)
                    {
                        resume = try damage(
                            .sequence, offset, "sequence number \(header.sequence) does not follow \(last)", validFramesFrom: offset,
                            resumeFrom: payloadOffset + header.storedLength)
                    } else {
                        pending.append(Frame(header: header, frameOffset: offset, payloadOffset: payloadOffset))
                        let end = payloadOffset + header.storedLength
                        if header.kind == .commit || compacted {
                            let delivered: Bool
                            do {
                                delivered = try onTransaction(pending)
                            } catch let d as FrameDamage {
                                // A record the frame checks could not judge is damaged: the frame
                                // that holds it is, under rules 4 and 5.
                                resume = try damage(.frame, d.frameOffset, "invalid frame: \(d.reason)", validFramesFrom: d.frameOffset + 1)
                                guard let resume else { return Outcome(validEnd: validEnd, tornTail: nil) }
                                offset = resume
                                continue scan
                            }
                            if delivered {
                                last = header.sequence
                                exact = version >= 2
                            } else {
                                exact = false
                            }
                            pending.removeAll()
                            validEnd = end
                        }
                        offset = end
                        continue scan
                    }
                }
                guard let resume else { return Outcome(validEnd: validEnd, tornTail: nil) }
                offset = resume
            }
            if let first = pending.first {
                if try damage(
                    .transaction, first.frameOffset, "transaction \(first.header.sequence) has no commit frame", validFramesFrom: buf.count)
                    == nil
                {
                    return Outcome(validEnd: validEnd, tornTail: nil)
                }
            }
            return Outcome(validEnd: validEnd, tornTail: nil)
        } catch let torn as TornTail {
            return Outcome(validEnd: torn.damage.validEnd, tornTail: torn.damage)
        } catch is NeedsMore {
            return Outcome(validEnd: validEnd, tornTail: nil, needsMore: true)
        }
    }

    /// Ends a partial read (`endIsFileEnd == false`) that needs the bytes after the buffer.
    private struct NeedsMore: Error {}

    /// Thrown by an `onTransaction` closure when a record of the transaction is damaged in a way
    /// only decoding it shows (format 4: a value that does not decompress to its length, a
    /// dictionary no define names): the frame at `frameOffset` (a buffer offset) then counts as
    /// an invalid frame, and rules 4 and 5 decide whether it is a torn tail (cut) or damage to
    /// durable data.
    package struct FrameDamage: Error {
        /// Buffer offset of the frame that holds the damaged record.
        package var frameOffset: Int
        /// What is wrong.
        package var reason: String
        package init(frameOffset: Int, reason: String) {
            self.frameOffset = frameOffset
            self.reason = reason
        }
    }

    /// Whether every byte of `buf` from `start` on is zero (rule 6). Word-wise.
    package static func isZero(_ buf: UnsafeRawBufferPointer, from start: Int) -> Bool {
        var i = max(0, start)
        let n = buf.count
        while i < n && i & 7 != 0 {
            if buf[i] != 0 { return false }
            i += 1
        }
        while n - i >= 8 {
            if buf.loadUnaligned(fromByteOffset: i, as: UInt64.self) != 0 { return false }
            i += 8
        }
        while i < n {
            if buf[i] != 0 { return false }
            i += 1
        }
        return true
    }

    /// Ends a read at a torn tail from inside ``read(_:from:compacted:isLast:lastSequence:onTransaction:onDamage:)``.
    private struct TornTail: Error { var damage: Damage }

    /// What the valid frames at or after `start` prove (format v2): the largest `syncedThrough` any
    /// of them records, and how many commit frames there are.
    static func laterFrames(_ buf: UnsafeRawBufferPointer, from start: Int, version: UInt16, compacted: Bool = false)
        -> (syncedThrough: UInt64, commits: Int)
    {
        var synced: UInt64 = 0
        var commits = 0
        var p = start
        while let at = nextValidFrame(buf, from: p, version: version, compacted: compacted),
            case .frame(let header, let payloadOffset) = LogFrame.parse(buf, at: at, version: version, compacted: compacted)
        {
            synced = max(synced, UInt64(header.syncedThrough))
            if header.kind == .commit { commits += 1 }
            p = payloadOffset + header.storedLength
        }
        return (synced, commits)
    }

    /// The offset of the first valid frame at or after `start` whose sequence is not `skip`, or nil.
    /// Cheap header checks come before the CRC, so the search is linear in the bytes after `start`.
    package static func nextValidFrame(
        _ buf: UnsafeRawBufferPointer, from start: Int, version: UInt16, compacted: Bool = false, skippingTransaction skip: UInt64? = nil
    ) -> Int? {
        var p = max(start, 0)
        while buf.count - p >= LogFrame.headerSize(version: version) {
            if LogFrame.Kind(rawValue: buf[p + 8]) != nil, buf[p + 9] & ~LogFrame.flagLZ4 == 0, buf[p + 10] == 0, buf[p + 11] == 0,
                case .frame(let header, let payloadOffset) = LogFrame.parse(buf, at: p, version: version, compacted: compacted)
            {
                if header.sequence != skip { return p }
                p = payloadOffset + header.storedLength
                continue
            }
            p += 1
        }
        return nil
    }
}
