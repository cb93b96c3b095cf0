import DequeModule
import Synchronization

/// A bounded, scan-resistant cache of decompressed frame payloads, keyed by (segment, frame
/// offset) (``RecordLocation/frameID``): what point reads of compressed frames, and of frames the
/// engine cannot map, keep between reads.
///
/// Policy: S3-FIFO (Yang et al., SOSP 2023) behind a ghost doorkeeper, per shard:
/// - A frame read for the first time is not cached: its id goes into the ghost FIFO (ids only, no
///   bytes), and the read decompresses only what it needs.
/// - A frame read again while its id is in the ghost FIFO is admitted with what that read
///   decompressed (a prefix of its payload); it enters the main FIFO if it left the window before,
///   else the small FIFO (the admission window, a tenth of the bytes). A later read that needs
///   more of the frame than is cached decompresses at least twice as much and replaces the
///   prefix, so reading a frame's records in order decompresses it about twice in all.
/// - A frame leaves the window for the main FIFO only if it is read again while there; otherwise
///   it leaves the cache and its id goes back to the ghost FIFO.
/// - The main FIFO is a CLOCK: each entry counts its reads (up to 3); eviction takes the oldest
///   entry whose count is 0 and decrements the others it passes, re-queueing them.
///
/// So a scan, or reads spread over far more frames than fit, cost one ghost id per frame and
/// never displace the frames that are read repeatedly.
///
/// Thread-safe: the key space is split over up to 8 shards, each behind its own mutex, held only
/// for the table update (no I/O, no decompression under it). Payloads are immutable arrays, so a
/// payload handed out stays valid after it is evicted.
final class FrameCache: Sendable {
    /// One shard: its own S3-FIFO over a share of the capacity.
    final class Shard: Sendable {
        let state: Mutex<S3FIFO>
        init(capacity: Int) { state = Mutex(S3FIFO(capacity: capacity)) }
    }

    /// What ``lookup(_:needing:)`` found.
    enum Lookup {
        /// A prefix of the frame's raw payload with at least the bytes asked for (or the whole
        /// payload).
        case hit([UInt8])
        /// Not cached (or fewer bytes than needed), but read recently: read at least `atLeast`
        /// bytes and ``insert(_:_:)`` them.
        case admit(atLeast: Int)
        /// Not cached and not admitted: read only what is needed, do not insert.
        case skip
    }

    /// Bytes the cache may hold, payloads plus ``S3FIFO/entryOverhead`` each.
    let capacity: Int
    private let shards: [Shard]

    init(capacity: Int) {
        let total = max(0, capacity)
        self.capacity = total
        // Shards of at least 4 MiB, so a frame of up to an eighth of a shard (512 KiB) is cached.
        var n = 1
        while n < 8 && total / (n * 2) >= 4 << 20 { n *= 2 }
        shards = (0..<n).map { _ in Shard(capacity: total / n) }
    }

    @inline(__always)
    private func shard(_ id: UInt64) -> Shard {
        // Segment numbers and frame offsets both vary in the low bits: mix before picking.
        let h = (id &* 0x9E37_79B9_7F4A_7C15) >> 58
        return shards[Int(h) & (shards.count - 1)]
    }

    /// The cached payload of frame `id` if it has the first `needed` bytes, or whether a read of
    /// it should cache what it reads.
    func lookup(_ id: UInt64, needing needed: Int) -> Lookup {
        guard capacity > 0 else { return .skip }
        return shard(id).state.withLock { $0.lookup(id, needing: needed) }
    }

    /// Caches `payload`, a prefix of frame `id`'s raw payload or all of it, after
    /// ``lookup(_:needing:)`` said `.admit`. A cached prefix is replaced only by a longer one.
    func insert(_ id: UInt64, _ payload: [UInt8]) {
        guard capacity > 0 else { return }
        shard(id).state.withLock { $0.insert(id, payload) }
    }

    /// Drops every payload (`close()`).
    func removeAll() {
        for s in shards { s.state.withLock { $0.removeAll() } }
    }

    /// Bytes held now (payloads plus overhead), over all shards. For tests and statistics.
    var bytesHeld: Int { shards.reduce(0) { total, s in total + s.state.withLock { $0.bytes } } }
}

/// The S3-FIFO state of one ``FrameCache`` shard (see there). A value type under the shard's
/// mutex; every operation is O(1) amortized.
struct S3FIFO {
    /// Bytes charged per entry on top of its payload (table slot, queue slot, array header).
    static let entryOverhead = 96
    /// Reads counted per entry: more would make a once-hot frame outlive a change of working set.
    static let maxFrequency: UInt8 = 3

    enum Place: UInt8 {
        /// Only the id is kept (recently read or evicted).
        case ghost
        /// In the admission window.
        case small
        case main
    }

    struct Entry {
        var payload: [UInt8]
        var frequency: UInt8 = 0
        var place: Place
        var charge: Int { payload.count + S3FIFO.entryOverhead }
    }

    let capacity: Int
    /// The admission window's share of the bytes.
    let smallCapacity: Int
    private(set) var bytes = 0
    private var smallBytes = 0
    private var entries: [UInt64: Entry] = [:]
    private var small: Deque<UInt64> = []
    private var main: Deque<UInt64> = []
    /// Ghost ids in the order they became ghosts; an id that left the ghost state since is
    /// skipped when it comes up.
    private var ghost: Deque<UInt64> = []
    private var ghosts = 0

    init(capacity: Int) {
        self.capacity = capacity
        smallCapacity = max(capacity / 10, 1)
    }

    mutating func lookup(_ id: UInt64, needing needed: Int) -> FrameCache.Lookup {
        if let i = entries.index(forKey: id) {
            if entries.values[i].place == .ghost { return .admit(atLeast: needed) }
            if entries.values[i].frequency < Self.maxFrequency { entries.values[i].frequency += 1 }
            let have = entries.values[i].payload.count
            return have >= needed ? .hit(entries.values[i].payload) : .admit(atLeast: max(needed, 2 * have))
        }
        entries[id] = Entry(payload: [], place: .ghost)
        addGhost(id)
        return .skip
    }

    mutating func insert(_ id: UInt64, _ payload: [UInt8]) {
        // A payload above an eighth of the shard would flush most of it for one frame.
        guard (payload.count + Self.entryOverhead) * 8 <= capacity else { return }
        var e = Entry(payload: payload, place: .small)
        if let i = entries.index(forKey: id) {
            guard entries.values[i].place == .ghost else {
                // A longer prefix of a cached frame.
                let old = entries.values[i].payload.count
                guard payload.count > old else { return }
                entries.values[i].payload = payload
                bytes += payload.count - old
                if entries.values[i].place == .small { smallBytes += payload.count - old }
                while bytes > capacity { evict() }
                return
            }
            ghosts -= 1
            // Read again soon after it left the window: part of the working set.
            if entries.values[i].frequency > 0 { e.place = .main }
        }
        if e.place == .main {
            main.append(id)
        } else {
            small.append(id)
            smallBytes += e.charge
        }
        bytes += e.charge
        entries[id] = e
        while bytes > capacity { evict() }
    }

    mutating func removeAll() { self = S3FIFO(capacity: capacity) }

    private mutating func evict() {
        if smallBytes > smallCapacity || main.isEmpty {
            evictSmall()
        } else {
            evictMain()
        }
    }

    /// The oldest entry of the admission window moves to the main FIFO if it was read again,
    /// else becomes a ghost (remembered as having been cached, so a read soon after re-admits it
    /// to the main FIFO).
    private mutating func evictSmall() {
        while let id = small.popFirst() {
            guard let i = entries.index(forKey: id) else { continue }
            let charge = entries.values[i].charge
            smallBytes -= charge
            if entries.values[i].frequency > 0 {
                entries.values[i].frequency = 0
                entries.values[i].place = .main
                main.append(id)
                // Moving frees nothing: once the window is within its share, evict from main.
                if smallBytes <= smallCapacity { return }
                continue
            }
            bytes -= charge
            entries.values[i] = Entry(payload: [], frequency: 1, place: .ghost)
            addGhost(id)
            return
        }
        evictMain()
    }

    /// CLOCK over the main FIFO: the oldest entry not read since it was last passed leaves.
    private mutating func evictMain() {
        while let id = main.popFirst() {
            guard let i = entries.index(forKey: id) else { continue }
            if entries.values[i].frequency > 0 {
                entries.values[i].frequency -= 1
                main.append(id)
                continue
            }
            bytes -= entries.values[i].charge
            entries.remove(at: i)
            return
        }
    }

    /// Keeps at most as many ghost ids as fit the shard in frames of 8 KiB (the default frame
    /// size; at least 64), oldest out first: about as many as the shard holds frames, so the
    /// doorkeeper admits a frame read twice within one turn of the cache.
    private mutating func addGhost(_ id: UInt64) {
        ghost.append(id)
        ghosts += 1
        let limit = max(64, capacity / 8192)
        while ghosts > limit, let old = ghost.popFirst() {
            guard let i = entries.index(forKey: old), entries.values[i].place == .ghost else { continue }
            entries.remove(at: i)
            ghosts -= 1
        }
        // Ids that stopped being ghosts stay in the queue until they come up; bound the waste.
        if ghost.count > 4 * limit {
            ghost = Deque(ghost.filter { entries[$0]?.place == .ghost })
        }
    }
}
