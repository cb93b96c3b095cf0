import Foundation
import LogStoreCommandSupport
import LogStoreEncryption
import LogStoreEngine

/// Finding, checking and locking the store a command works on.
enum StoreAccess {
    static let fs = POSIXFileSystem()

    /// `path` made absolute (against the current directory) without trailing slashes; the engine
    /// wants absolute paths.
    static func resolve(_ path: String) -> String {
        var p = path.hasPrefix("/") ? path : _joinPath(FileManager.default.currentDirectoryPath, path)
        while p.count > 1 && p.hasSuffix("/") { p.removeLast() }
        return (p as NSString).standardizingPath
    }

    /// Checks that `dir` is an existing directory with a `MANIFEST` or segment files, without
    /// creating anything (opening an engine on a wrong path would create a store there).
    /// Throws a `.notAStore` ``ToolFailure`` that says what the path is instead.
    static func requireStore(_ dir: String) throws {
        switch fs.itemKind(atPath: dir) {
        case nil:
            throw ToolFailure(.notAStore, "No store at \(dir): the path does not exist.", path: dir)
        case .file?:
            throw ToolFailure(.notAStore, "\(dir) is a file; a store is a directory.", path: dir)
        case .directory?:
            break
        }
        let names = try fs.contentsOfDirectory(atPath: dir)
        let isStore =
            names.contains(LogStoreFormat.manifestFileName)
            || names.contains { LogStoreFormat.segmentNumber(fromFileName: $0) != nil }
        guard isStore else {
            throw ToolFailure(.notAStore, "\(dir) is not a LogStore store (no MANIFEST and no segment files).", path: dir)
        }
    }

    /// The encryption that `options` give (``StoreEncryption/none`` without a key), checked
    /// against MANIFEST's key check before a command reads the store, so that commands which read
    /// the files without opening an engine refuse a key as an engine would. Throws `.usage`
    /// failures for an unreadable or malformed key, `.wrongKey` for a missing or wrong key of an
    /// encrypted store, `.notEncrypted` for a key given to a store that is not encrypted. A
    /// MANIFEST that does not read is left to the command to report.
    static func encryption(_ options: KeyOptions, for dir: String) throws -> StoreEncryption {
        let encryption = try options.load().map { try StoreEncryption.aes256GCM(key: $0.bytes) } ?? .none
        let path = _joinPath(dir, LogStoreFormat.manifestFileName)
        guard let f = try? fs.open(path, mode: .readOnly) else { return encryption }
        defer { try? f.close() }
        guard let size = try? f.size(), size <= 1 << 30, let bytes = try? f.read(at: 0, count: Int(size)),
            let manifest = try? ManifestFile.decode(bytes, path: path)
        else { return encryption }
        _ = try encryption.select(
            storeCipher: manifest.cipher, keyCheck: manifest.keyCheck, storeID: manifest.storeId ?? StoreID(bytes: []), path: path)
        return encryption
    }

    /// Takes the store's lock (as an engine would) so that no app opens it meanwhile.
    /// Throws a `.locked` ``ToolFailure`` when another process or store object holds it.
    static func lock(_ dir: String) throws -> any FileSystemLock {
        do {
            return try fs.lock(atPath: _joinPath(dir, LogStoreFormat.lockFileName))
        } catch let e as LogStoreError where e.code == .locked {
            throw lockedFailure(dir)
        }
    }

    static func lockedFailure(_ dir: String) -> ToolFailure {
        ToolFailure(
            .locked,
            "The store at \(dir) is in use: another process (or store object) holds its LOCK. Close the app that has it open and run the command again.",
            path: dir)
    }

    /// Runs `body` holding the store's lock.
    static func withLock<R>(_ dir: String, _ body: () throws -> R) throws -> R {
        let lock = try lock(dir)
        defer { lock.unlock() }
        return try body()
    }

    /// Opens an engine with `encryption` (the store's key, from ``encryption(_:for:)``), turning a
    /// held lock into the tool's `.locked` failure.
    static func openEngine(_ dir: String, options: LogEngineOptions, encryption: StoreEncryption = .none) throws -> LogEngine {
        var options = options
        options.encryption = encryption
        do {
            return try LogEngine.open(directory: dir, fileSystem: fs, options: options)
        } catch let e as LogStoreError where e.code == .locked {
            throw lockedFailure(dir)
        }
    }

    /// Options for reading a store without changing it: salvage recovery opens every file
    /// read-only and never cuts, removes or rewrites anything.
    /// Opens `dir` read-only (nothing cut or removed) with `encryption`, but refuses what a strict
    /// open would refuse: a command that rewrites a whole store (`command`: `compact`, `rekey`)
    /// must copy everything, or it is a salvage. Throws a `.damage` failure naming the first
    /// damaged range, and what ``openEngine(_:options:encryption:)`` throws.
    static func openIntact(_ dir: String, encryption: StoreEncryption, command: String) throws -> LogEngine {
        let engine = try openEngine(dir, options: readOnlyOptions, encryption: encryption)
        if let first = engine.recoveryReport.dropped.first {
            try? engine.close()
            throw ToolFailure(
                .damage,
                "The store is damaged (\(first)); \(command) does not write a partial copy. `logstore-compact verify` lists the damage; `salvage --into <dir>` copies every valid transaction.",
                path: first.path)
        }
        return engine
    }

    static var readOnlyOptions: LogEngineOptions {
        var o = LogEngineOptions()
        o.recovery = .salvage
        o.checkpointOnClose = false
        o.autoCompaction = false
        o.cacheSize = 8 << 20
        return o
    }

    /// Bytes and segment files in `dir` (0, 0 when it does not exist).
    static func measure(_ dir: String) -> (bytes: UInt64, segments: Int, files: Int) {
        guard let names = try? fs.contentsOfDirectory(atPath: dir) else { return (0, 0, 0) }
        var bytes: UInt64 = 0
        var segments = 0
        var files = 0
        for name in names {
            let path = _joinPath(dir, name)
            guard fs.itemKind(atPath: path) == .file, let f = try? fs.open(path, mode: .readOnly) else { continue }
            bytes += (try? f.size()) ?? 0
            try? f.close()
            files += 1
            if LogStoreFormat.segmentNumber(fromFileName: name) != nil { segments += 1 }
        }
        return (bytes, segments, files)
    }

    /// Checks a target directory for a new store: it must be missing or empty, and must not be
    /// the source or inside it. Throws a `.usage` ``ToolFailure``.
    static func requireEmptyTarget(_ target: String, source: String) throws {
        if target == source || target.hasPrefix(source + "/") || source.hasPrefix(target + "/") {
            throw ToolFailure(.usage, "The target \(target) must be outside the store \(source).", path: target)
        }
        switch fs.itemKind(atPath: target) {
        case nil: return
        case .file?: throw ToolFailure(.usage, "The target \(target) is a file; give a new or empty directory.", path: target)
        case .directory?:
            let names = try fs.contentsOfDirectory(atPath: target)
            if !names.isEmpty {
                throw ToolFailure(
                    .usage,
                    "The target \(target) is not empty (\(names.sorted().prefix(3).joined(separator: ", "))\(names.count > 3 ? ", ..." : "")). Give a new or empty directory; nothing is ever written over existing files.",
                    path: target)
            }
        }
    }
}

/// A byte size on the command line: `65536`, `64K`, `64KiB`, `8M`, `1G` (binary units).
struct ByteSize: Sendable {
    var bytes: Int

    init?(parsing text: String) {
        var t = text.trimmingCharacters(in: .whitespaces).uppercased()
        for suffix in ["IB", "B"] where t.hasSuffix(suffix) {
            t.removeLast(suffix.count)
            break
        }
        var shift = 0
        switch t.last {
        case "K": shift = 10
        case "M": shift = 20
        case "G": shift = 30
        default: break
        }
        if shift > 0 { t.removeLast() }
        guard let n = Int(t), n >= 0, n <= (Int.max >> shift) else { return nil }
        bytes = n << shift
    }
}
