import Foundation

/// Where a ``BackendMigrator`` is: reported to its progress handler while it copies or verifies.
/// A value; any thread.
public struct BackendMigrationProgress: Sendable, CustomStringConvertible {
    /// What the migrator is doing.
    public enum Phase: String, Sendable {
        /// Copying items from the source to the destination.
        case copying
        /// Comparing the destination with the source.
        case verifying
    }

    /// The phase.
    public var phase: Phase
    /// The item type being copied or verified.
    public var itemType: String
    /// Items copied (or compared) so far, over every type, this run included what an earlier
    /// interrupted run copied.
    public var items: Int
    /// Items to copy (or compare) in all: the source's count when the phase started.
    public var totalItems: Int
    /// Bytes of items' canonical encoding copied (or compared) so far.
    public var bytes: Int
    /// Time since the phase started (this run).
    public var elapsed: Duration
    /// Items this run handled so far.
    public var itemsThisRun: Int

    /// Items per second this run.
    public var itemsPerSecond: Double {
        let s = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        return s > 0 ? Double(itemsThisRun) / s : 0
    }

    /// Estimated time left at this run's rate; nil before a rate is known.
    public var estimatedRemaining: Duration? {
        let rate = itemsPerSecond
        guard rate > 0 else { return nil }
        return .seconds(Double(max(0, totalItems - items)) / rate)
    }

    /// Fraction done, 0 to 1.
    public var fraction: Double { totalItems == 0 ? 1 : min(1, Double(items) / Double(totalItems)) }

    /// `copying Restaurant: 120,000 / 1,000,000 items (12%), 36 MiB, 48,000 items/s, 18 s left`.
    public var description: String {
        var s =
            "\(phase.rawValue) \(itemType): \(items) / \(totalItems) items (\(Int(fraction * 100))%), \(bytes) bytes, \(Int(itemsPerSecond)) items/s"
        if let eta = estimatedRemaining { s += ", \(eta.components.seconds) s left" }
        return s
    }
}

/// What ``BackendMigrator/catchUp()`` did. A value; any thread.
public struct BackendMigrationCatchUpReport: Sendable, Equatable {
    /// The source's change token the destination is now caught up to.
    public var token: DataStoreChangeToken
    /// Items copied again (inserted or changed in the source after the previous token).
    public var written: Int
    /// Items deleted from the destination (deleted in the source after the previous token).
    public var deleted: Int
    /// How long it took.
    public var duration: Duration
}

/// What ``BackendMigrator/copy(resume:)`` did. A value; any thread.
public struct BackendMigrationCopyReport: Sendable, Equatable {
    /// Per item type, what was copied.
    public struct TypeCopy: Sendable, Equatable {
        /// The item type.
        public var itemType: String
        /// Items copied in all (by this run and the runs it resumed).
        public var items: Int
        /// Bytes of canonical item encodings copied in all.
        public var bytes: Int
    }

    /// The item types, in the order they were copied.
    public var types: [TypeCopy]
    /// Whether this run resumed an interrupted copy (from the cursor kept in the destination).
    public var resumed: Bool
    /// Items this run copied (without what earlier runs copied).
    public var itemsThisRun: Int
    /// How long this run took.
    public var duration: Duration

    /// Items copied in all.
    public var items: Int { types.reduce(0) { $0 + $1.items } }
    /// Bytes copied in all.
    public var bytes: Int { types.reduce(0) { $0 + $1.bytes } }
}

/// What ``BackendMigrator/verify()`` found. A value; any thread.
public struct BackendMigrationVerification: Sendable, Equatable {
    /// One item type compared.
    public struct TypeResult: Sendable, Equatable {
        /// The item type.
        public var itemType: String
        /// Items in the source.
        public var sourceCount: Int
        /// Items in the destination.
        public var destinationCount: Int
        /// The source's order-independent digest of its items (``BackendMigrationDigest``), hex.
        public var sourceDigest: String
        /// The destination's digest.
        public var destinationDigest: String
        /// Items in the source and not in the destination (in key order; the first
        /// ``BackendMigrator/reportLimit`` of them), and how many in all.
        public var missing: [String]
        /// How many items are missing in all.
        public var missingCount: Int
        /// Items in the destination and not in the source.
        public var extra: [String]
        /// How many items are extra in all.
        public var extraCount: Int
        /// Items in both whose canonical encodings differ.
        public var differing: [String]
        /// How many items differ in all.
        public var differingCount: Int

        /// Whether both sides hold exactly the same items.
        public var isEqual: Bool { missingCount == 0 && extraCount == 0 && differingCount == 0 && sourceDigest == destinationDigest }
    }

    /// Every type compared, in name order.
    public var types: [TypeResult]
    /// How long the verification took.
    public var duration: Duration

    /// Whether every type matched.
    public var isEqual: Bool { types.allSatisfy(\.isEqual) }
}
