public import LogStoreEngine

/// The reference model a crash test checks a recovered store against (Docs/Testing.md, "Oracle").
///
/// It tracks transactions in commit order: those *acknowledged* (promised durable: the commit
/// returned under `.synchronous` durability, or a later flush returned) and those *attempted*
/// but not acknowledged (in flight when the crash hit, or not yet flushed). After a crash the store
/// must show exactly the state after transactions 1...k, for one k with
/// `lastAcknowledged <= k <= lastAttempted`:
/// - every acknowledged transaction is present and complete;
/// - no transaction is partly visible, and what is present is a prefix of the commit order
///   (markers `txn/1...k`, no holes);
/// - deleted items do not come back, and every value passes its own checksum
///   (``CrashWorkloadValue``).
///
/// A value type; use from one thread.
public struct CrashOracle: Sendable {
    struct Pending: Sendable {
        var number: UInt64
        var after: CrashModelState
    }

    /// The state after every acknowledged transaction.
    public private(set) var acknowledgedState: CrashModelState = [:]
    /// The number of the last acknowledged transaction (0: none).
    public private(set) var lastAcknowledged: UInt64 = 0
    var pending: [Pending] = []

    /// An empty store's model.
    public init() {}

    /// The number of the last transaction attempted (acknowledged or not).
    public var lastAttempted: UInt64 { pending.last?.number ?? lastAcknowledged }

    /// The state after every attempted transaction: what the next transaction starts from.
    public var headState: CrashModelState { pending.last?.after ?? acknowledgedState }

    /// Records that transaction `lastAttempted + 1` with `operations` is about to be committed;
    /// returns its number.
    @discardableResult
    public mutating func begin(_ operations: [RecordOperation]) -> UInt64 {
        var state = headState
        Self.apply(operations, to: &state)
        let n = lastAttempted + 1
        pending.append(Pending(number: n, after: state))
        return n
    }

    /// Records that the commit of transaction `number` (and so every earlier one) returned.
    public mutating func acknowledge(_ number: UInt64) {
        while let first = pending.first, first.number <= number {
            acknowledgedState = first.after
            lastAcknowledged = first.number
            pending.removeFirst()
        }
    }

    /// After a recovery that showed transactions 1...k: those are now as good as acknowledged
    /// (a later crash must not lose them) and the lost ones are forgotten.
    public mutating func adoptRecovered(_ k: UInt64) {
        acknowledge(k)
        pending.removeAll()
    }

    /// Applies operations in order to a model state (the engine's semantics).
    public static func apply(_ operations: [RecordOperation], to state: inout CrashModelState) {
        for op in operations {
            switch op {
            case .put(let t, let k, let v): state[t, default: [:]][k] = v
            case .delete(let t, let k):
                state[t]?[k] = nil
                if state[t]?.isEmpty == true { state[t] = nil }
            case .deleteAll(let t): state[t] = nil
            }
        }
    }

    /// The model state after transaction `k` (which must be in `lastAcknowledged...lastAttempted`).
    public func state(after k: UInt64) -> CrashModelState? {
        if k == lastAcknowledged { return acknowledgedState }
        return pending.first { $0.number == k }?.after
    }

    /// Checks a recovered store's contents. Returns the k it shows (the number of its last
    /// transaction) or throws a ``CrashOracleViolation`` that says what is wrong.
    public func check(_ observed: CrashModelState) throws -> UInt64 {
        let markers = (observed[CrashWorkloadValue.markerType] ?? [:]).keys.compactMap(CrashWorkloadValue.transactionNumber(ofMarkerKey:))
            .sorted()
        let k = markers.last ?? 0
        if markers.count != Int(k) {
            let present = Set(markers)
            let holes = (1...k).filter { !present.contains($0) }
            throw CrashOracleViolation(
                "Hole in the commit order: transaction \(k) is present but \(holes.prefix(10).map(String.init).joined(separator: ", ")) \(holes.count == 1 ? "is" : "are") missing."
            )
        }
        if k < lastAcknowledged {
            throw CrashOracleViolation(
                "Acknowledged transactions lost: the store shows transactions 1...\(k), but 1...\(lastAcknowledged) were acknowledged.")
        }
        guard k <= lastAttempted, let expected = state(after: k) else {
            throw CrashOracleViolation("The store shows transaction \(k), but only 1...\(lastAttempted) were attempted.")
        }
        if observed == expected { return k }
        // Something differs: say what, starting with values that are not intact on their own.
        for (type, records) in observed.sorted(by: { $0.key < $1.key }) {
            for (key, value) in records.sorted(by: { $0.key < $1.key }) where CrashWorkloadValue.decode(value, type: type, key: key) == nil
            {
                throw CrashOracleViolation("Corrupt value: \(type)/\(key) (\(value.count) bytes) fails its checksum.")
            }
        }
        let differences = Self.differences(observed: observed, expected: expected)
        if !differences.isEmpty {
            throw CrashOracleViolation(
                "After transactions 1...\(k) (acknowledged \(lastAcknowledged), attempted \(lastAttempted)) the store differs from the model (partly visible transaction or resurrected/lost items): "
                    + differences.prefix(8).joined(separator: "; ")
                    + (differences.count > 8 ? "; ... \(differences.count) differences" : ""))
        }
        return k
    }

    /// Human-readable differences between two states, each naming the writing transactions.
    public static func differences(observed: CrashModelState, expected: CrashModelState) -> [String] {
        var out: [String] = []
        for type in Set(observed.keys).union(expected.keys).sorted() {
            let o = observed[type] ?? [:]
            let e = expected[type] ?? [:]
            for key in Set(o.keys).union(e.keys).sorted() {
                let ov = o[key]
                let ev = e[key]
                if ov == ev { continue }
                func who(_ v: [UInt8]?) -> String {
                    guard let v else { return "absent" }
                    return CrashWorkloadValue.decode(v, type: type, key: key).map { "written by txn \($0)" } ?? "undecodable"
                }
                out.append("\(type)/\(key): store has \(who(ov)), model has \(who(ev))")
            }
        }
        return out
    }
}

/// A broken crash-consistency promise, found by ``CrashOracle/check(_:)``.
public struct CrashOracleViolation: Error, Sendable, CustomStringConvertible {
    /// What is wrong.
    public var message: String
    /// Creates a violation.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}
