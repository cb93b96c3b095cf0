import Synchronization

/// Where delta-tree nodes (``DeltaTree``) come from and go back to, and the record of which tree
/// versions are still in use, which decides when a replaced node may be freed (interval-based
/// reclamation: Docs/Design.md, "Tree nodes without reference counts").
///
/// - Every tree version is a ``DeltaTreeVersion`` object with a number from ``register()``; the
///   number stays registered until the object is deinitialized, that is until no copy of the tree
///   (no index state, view or snapshot) holds it. Holding a snapshot is what pins its version: no
///   reader table or per-read announcement is needed, because a reader always holds the version
///   object of the tree it reads.
/// - A node carries the version it was made at (`born`). A writer that replaces a node at version
///   `v` (its path copy) retires it with `died = v`; a tree version that goes away with no
///   version derived from it retires every node it still reaches with `died = its version + 1`.
///   A node is reachable only from versions in `[born, died)` of its tree's history, so it is
///   freed once no registered version lies in that interval. A snapshot held for a long time
///   keeps only the nodes of its own version alive, not everything retired after it.
/// - Nodes are plain memory with no reference counts, so copying a node copies its bytes and
///   retains nothing.
///
/// One arena serves the process (``shared``). Its state is behind one lock, taken when a tree
/// version is made or dropped and when nodes are retired; reads of trees never take it.
/// `@unchecked Sendable`: all mutable state is behind `state`.
package final class NodeArena: @unchecked Sendable {
    /// The arena every tree uses.
    package static let shared = NodeArena()

    struct Retired: @unchecked Sendable {
        var node: UnsafeMutableRawPointer
        var born: UInt64
        var died: UInt64
        var bytes: Int
    }

    private struct State {
        var nextVersion: UInt64 = 1
        /// Registered versions, ascending (new ones are the largest: appended).
        var live: [UInt64] = []
        var retired: [Retired] = []
        var reclaimAt = 512
        /// Freed blocks kept for reuse, per block size (few sizes: one per node shape).
        var free: [(bytes: Int, blocks: [UnsafeMutableRawPointer])] = []
    }

    /// Most blocks of one size kept for reuse (about 4 MiB of nodes); more go back to the system.
    private static let keptBlocks = 4096

    private let state = Mutex(State())
    private let allocatedBytes = Atomic<Int>(0)
    private let allocatedNodes = Atomic<Int>(0)

    /// A new arena (tests; the engine uses ``shared``).
    package init() {}

    /// A new version number, registered as in use until ``unregister(_:)``.
    func register() -> UInt64 {
        state.withLock { s in
            let v = s.nextVersion
            s.nextVersion += 1
            s.live.append(v)
            return v
        }
    }

    /// Version `v` is no longer in use; frees what only it kept alive once enough is retired.
    func unregister(_ v: UInt64, retiring nodes: [Retired] = []) {
        let free = state.withLock { s -> (freed: [Retired], toSystem: [Retired]) in
            var lo = 0
            var hi = s.live.count
            while lo < hi {
                let mid = (lo + hi) >> 1
                if s.live[mid] < v { lo = mid + 1 } else { hi = mid }
            }
            if lo < s.live.count && s.live[lo] == v { s.live.remove(at: lo) }
            s.retired.append(contentsOf: nodes)
            return s.retired.count >= s.reclaimAt ? Self.collect(&s) : ([], [])
        }
        release(free)
    }

    /// Memory for a node of `bytes` bytes (16-byte aligned).
    @inline(__always)
    func allocate(_ bytes: Int) -> UnsafeMutableRawPointer {
        allocatedBytes.add(bytes, ordering: .relaxed)
        allocatedNodes.add(1, ordering: .relaxed)
        let reused = state.withLock { s -> UnsafeMutableRawPointer? in
            for i in s.free.indices where s.free[i].bytes == bytes { return s.free[i].blocks.popLast() }
            return nil
        }
        return reused ?? .allocate(byteCount: bytes, alignment: 16)
    }

    /// Nodes replaced by a writer: freed once no registered version can reach them.
    func retire(_ nodes: [Retired]) {
        guard !nodes.isEmpty else { return }
        let free = state.withLock { s -> (freed: [Retired], toSystem: [Retired]) in
            s.retired.append(contentsOf: nodes)
            return s.retired.count >= s.reclaimAt ? Self.collect(&s) : ([], [])
        }
        release(free)
    }

    /// Frees every retired node no registered version can reach; returns how many. (Runs on its
    /// own every few hundred retirements; tests call it to see the effect at once.)
    @discardableResult
    package func reclaim() -> Int {
        let free = state.withLock { Self.collect(&$0) }
        release(free)
        return free.freed.count
    }

    /// Takes the retired nodes that no live version lies in `[born, died)` of out of `s`.
    private static func collect(_ s: inout State) -> (freed: [Retired], toSystem: [Retired]) {
        let versions = s.live
        var keep: [Retired] = []
        var free: [Retired] = []
        for r in s.retired {
            // The first live version at or after `born`: the node is reachable iff it is below `died`.
            var lo = 0
            var hi = versions.count
            while lo < hi {
                let mid = (lo + hi) >> 1
                if versions[mid] < r.born { lo = mid + 1 } else { hi = mid }
            }
            if lo < versions.count && versions[lo] < r.died { keep.append(r) } else { free.append(r) }
        }
        s.retired = keep
        s.reclaimAt = max(512, keep.count * 2)
        // Blocks for reuse first; what does not fit goes back to the system (`release`).
        var rest: [Retired] = []
        for r in free {
            #if LOGSTORE_CHECK_INVARIANTS
                // Poisoned: a use after free reads 0xDB bytes (a born version no tree has).
                r.node.initializeMemory(as: UInt8.self, repeating: 0xDB, count: r.bytes)
            #endif
            if let i = s.free.firstIndex(where: { $0.bytes == r.bytes }) {
                if s.free[i].blocks.count < keptBlocks {
                    s.free[i].blocks.append(r.node)
                } else {
                    rest.append(r)
                }
            } else {
                s.free.append((r.bytes, [r.node]))
            }
        }
        return (free, rest)
    }

    private func release(_ collected: (freed: [Retired], toSystem: [Retired])) {
        for r in collected.toSystem { r.node.deallocate() }
        var bytes = 0
        for r in collected.freed { bytes += r.bytes }
        allocatedBytes.subtract(bytes, ordering: .relaxed)
        allocatedNodes.subtract(collected.freed.count, ordering: .relaxed)
    }

    /// What the arena holds now.
    package struct Statistics: Sendable, Equatable {
        /// Tree versions in use.
        package var liveVersions: Int
        /// Nodes replaced but not yet freed (a registered version may still reach them).
        package var retiredNodes: Int
        /// Nodes allocated and not freed (in trees or retired), and their bytes.
        package var nodes: Int
        package var bytes: Int
    }

    /// See ``Statistics``.
    package var statistics: Statistics {
        let (live, retired) = state.withLock { ($0.live.count, $0.retired.count) }
        return Statistics(
            liveVersions: live, retiredNodes: retired, nodes: allocatedNodes.load(ordering: .relaxed),
            bytes: allocatedBytes.load(ordering: .relaxed))
    }
}
