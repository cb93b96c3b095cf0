import LogStoreCommandSupport
import LogStoreEngine

/// One problem found by ``StoreScanner`` or by ``StoreScan/compareIndex(with:)``: which file,
/// where in it, what is wrong, and whether it is damage or only worth knowing.
///
/// A value type; valid forever. Used by `logstore-compact verify`, whose `--json` output prints
/// these fields under the same names (Docs/CLI.md, "verify").
public struct StoreIssue: Sendable, Hashable, CustomStringConvertible {
    /// How bad an issue is.
    public enum Severity: String, Sendable, Hashable {
        /// Committed data is unreadable, inconsistent or lost: `verify` exits 1.
        case damage
        /// Not data loss: a torn tail an interrupted write left (the next open cuts it), a stray
        /// file an interrupted operation left, a file this build cannot check.
        case warning
    }

    /// What part of the store an issue is about. Stable identifiers (printed by `--json`).
    public struct Kind: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The stable identifier.
        public let rawValue: String
        /// Creates a kind from its identifier.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The stable identifier.
        public var description: String { rawValue }

        /// `MANIFEST`: missing, bad magic, checksum, structure.
        public static let manifest = Kind(rawValue: "manifest")
        /// A segment's 32-byte header.
        public static let segmentHeader = Kind(rawValue: "segmentHeader")
        /// A frame: header, checksum, length, LZ4 payload.
        public static let frame = Kind(rawValue: "frame")
        /// Transaction structure: frames without a commit, sequence numbers out of order.
        public static let transaction = Kind(rawValue: "transaction")
        /// A record inside a frame payload (operation tag, type name, key, value length).
        public static let record = Kind(rawValue: "record")
        /// A put's value bytes do not decode as an ``AttributeValue``.
        public static let value = Kind(rawValue: "value")
        /// The engine's in-memory index disagrees with an independent replay of the log.
        public static let index = Kind(rawValue: "index")
        /// A file the manifest lists is missing, or a file could not be read.
        public static let file = Kind(rawValue: "file")
        /// A file an interrupted operation left behind (not listed in the manifest).
        public static let strayFile = Kind(rawValue: "strayFile")
        /// The torn end of the last segment (an interrupted append; cut by the next open).
        public static let tornTail = Kind(rawValue: "tornTail")
        /// A checkpoint file.
        public static let checkpoint = Kind(rawValue: "checkpoint")
        /// A file written by a newer format version than this build reads.
        public static let unsupportedVersion = Kind(rawValue: "unsupportedVersion")
        /// The engine refused to open the store.
        public static let engineOpen = Kind(rawValue: "engineOpen")
    }

    /// Damage or warning.
    public var severity: Severity
    /// What part of the store.
    public var kind: Kind
    /// The file concerned (absolute path).
    public var path: String
    /// Byte offset in ``path`` where the problem is, when it has a position.
    public var offset: UInt64?
    /// What is wrong, in words.
    public var message: String

    /// Creates an issue.
    public init(_ severity: Severity, _ kind: Kind, path: String, offset: UInt64?, _ message: String) {
        self.severity = severity
        self.kind = kind
        self.path = path
        self.offset = offset
        self.message = message
    }

    /// `damage frame /path/000002.log@1234: checksum mismatch`.
    public var description: String {
        "\(severity.rawValue) \(kind.rawValue) \(path)\(offset.map { "@\($0)" } ?? ""): \(message)"
    }
}
