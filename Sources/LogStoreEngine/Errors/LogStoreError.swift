/// The one error type LogStore throws (the engine, the DataStore API and the tools).
///
/// Match on ``code``; it is an extensible set of static values (new codes are added without
/// breaking `switch` statements that have a `default`). ``message`` says what went wrong and how to
/// fix it; ``path`` and ``offset`` locate corruption; ``underlyingError`` carries the cause
/// (an `errno`-based ``SystemError``, a failed step's own error, ...). No field holds a user's
/// data: messages give sizes, names, paths and offsets, never values.
///
/// The error of a *user* block thrown inside `read`/`writeSync` is never wrapped in a
/// `LogStoreError`: it reaches the caller as the same value.
public struct LogStoreError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What kind of failure this is. Compare with the static members, e.g. `error.code == .corruption`.
    ///
    /// The engine declares the codes of storage failures; layers above add their own in
    /// extensions (the DataStore layer's child-store codes are in `LogStore`), so a code's
    /// meaning lives next to the code that throws it. Raw values never change.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// Stable identifier, also used in the CLI's `--json` output.
        public let rawValue: String
        /// Creates a code from its stable identifier.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        /// The stable identifier.
        public var description: String { rawValue }

        /// The store was used before `setup()` or after `tearDown()`.
        public static let notOpen = Code("notOpen")
        /// Another `LogDataStore`/engine (in this process or another) holds the store's lock.
        public static let locked = Code("locked")
        /// A checksum, length or structure on disk is wrong; ``LogStoreError/path`` and
        /// ``LogStoreError/offset`` say where.
        public static let corruption = Code("corruption")
        /// The store was written by a newer LogStore format version than this build reads.
        public static let unsupportedFormatVersion = Code("unsupportedFormatVersion")
        /// The directory exists and holds files, but it is not a LogStore store.
        public static let notAStore = Code("notAStore")
        /// A system call failed (see ``LogStoreError/underlyingError``).
        public static let io = Code("io")
        /// The disk (or quota) is full. Nothing committed was lost; free space and retry.
        public static let diskFull = Code("diskFull")
        /// The operating system refused access to a file or directory.
        public static let permissionDenied = Code("permissionDenied")
        /// A write failed to reach the disk (`fsync` failed). The store refuses further writes
        /// until it is reopened; committed data before the failure is safe.
        public static let storePoisoned = Code("storePoisoned")
        /// An item is larger than ``LogEngineOptions``'s `maxItemSize`.
        public static let itemTooLarge = Code("itemTooLarge")
        /// A key or item type name is larger than the limit.
        public static let keyTooLarge = Code("keyTooLarge")
        /// A write block tried to start another write on the same store (it would deadlock).
        public static let reentrantWrite = Code("reentrantWrite")
        /// An argument is invalid (for example a negative offset).
        public static let invalidArgument = Code("invalidArgument")
        /// An accessor was used outside the block that received it.
        public static let accessorExpired = Code("accessorExpired")
        /// A write would give two records of a type equal values in every attribute of a unique
        /// index (``IndexDefinition/unique``), or a unique index was declared over records that
        /// already break it. The transaction is rolled back (the declaration refused): nothing
        /// is written.
        public static let uniqueConstraintViolation = Code("uniqueConstraintViolation")
        /// The store is encrypted and was opened without its key, or with keys none of which is
        /// its key (MANIFEST's key check does not match). Thrown by open before any file is
        /// changed. Never used for damage: a record that fails to authenticate under the right key
        /// is ``corruption``.
        public static let wrongKey = Code("wrongKey")
        /// A key was given for a store that is not encrypted (``StoreEncryption``): the store
        /// refuses rather than ignore the key. Thrown by open before any file is changed.
        public static let notEncrypted = Code("notEncrypted")
    }

    /// The kind of failure.
    public var code: Code
    /// What happened and what to do about it.
    public var message: String
    /// The file or directory concerned, when there is one.
    public var path: String?
    /// The byte offset in ``path`` where corruption was found, when known.
    public var offset: UInt64?
    /// The cause, when another error caused this one.
    public var underlyingError: (any Error)?
    /// Facts a layer above the engine attaches to a code of its own, read through that layer's
    /// accessors (the DataStore layer's `conflicts` of a merge and `migration` of a failed
    /// migration step). Nil for the engine's codes. Never a user's data: only names and ids the
    /// layer chose to report.
    public var details: (any Sendable)?

    /// Creates an error. Library code uses this; users normally only read errors.
    public init(
        _ code: Code, _ message: String, path: String? = nil, offset: UInt64? = nil,
        underlying: (any Error)? = nil, details: (any Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.path = path
        self.offset = offset
        self.underlyingError = underlying
        self.details = details
    }

    /// `code: message (path at offset N) [cause]`.
    public var description: String {
        var s = "LogStoreError.\(code): \(message)"
        if let path {
            s += " [\(path)"
            if let offset { s += " at offset \(offset)" }
            s += "]"
        }
        if let underlyingError { s += " (cause: \(underlyingError))" }
        return s
    }

    /// Same as ``description``.
    public var debugDescription: String { description }
}

/// A failed system call: the call, its `errno` and the system's text for it.
public struct SystemError: Error, Sendable, CustomStringConvertible {
    /// The call that failed, e.g. `"open"`.
    public var call: String
    /// The `errno` value.
    public var errno: Int32
    /// Creates a system error.
    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }
    /// `open: No such file or directory (errno 2)`.
    public var description: String { "\(call): \(_systemErrorText(errno)) (errno \(errno))" }
}
