import Synchronization

/// A file system held entirely in memory: what `LogDataStore.inMemory()` runs on, and a fast
/// substrate for tests. `sync` calls are no-ops; nothing survives the object.
///
/// Thread-safe: all state lives behind one mutex. File contents are shared between every handle
/// open on the same path, as on a real file system.
public final class InMemoryFileSystem: FileSystem {
    final class Node: Sendable {
        let data = Mutex<[UInt8]>([])
    }
    struct State {
        var files: [String: Node] = [:]
        var directories: Set<String> = ["/"]
        var locks: Set<String> = []
    }
    let state = Mutex(State())

    /// Creates an empty file system with only the root directory `/`.
    public init() {}

    static func normalize(_ p: String) -> String {
        var p = p
        while p.count > 1, p.hasSuffix("/") { p.removeLast() }
        return p
    }
    static func parent(_ p: String) -> String {
        guard let i = p.lastIndex(of: "/") else { return "/" }
        return i == p.startIndex ? "/" : String(p[..<i])
    }

    /// See ``FileSystem/createDirectory(atPath:)``.
    public func createDirectory(atPath path: String) throws {
        var p = Self.normalize(path)
        try state.withLock { s in
            var chain: [String] = []
            while p != "/" && !s.directories.contains(p) {
                if s.files[p] != nil { throw LogStoreError(.io, "A file exists where a directory is wanted.", path: p) }
                chain.append(p)
                p = Self.parent(p)
            }
            for d in chain { s.directories.insert(d) }
        }
    }

    /// See ``FileSystem/contentsOfDirectory(atPath:)``.
    public func contentsOfDirectory(atPath path: String) throws -> [String] {
        let p = Self.normalize(path)
        return try state.withLock { s in
            guard s.directories.contains(p) else { throw LogStoreError(.io, "No such directory.", path: p) }
            let prefix = p == "/" ? "/" : p + "/"
            var names: [String] = []
            for f in s.files.keys where f.hasPrefix(prefix) && !f.dropFirst(prefix.count).contains("/") {
                names.append(String(f.dropFirst(prefix.count)))
            }
            for d in s.directories where d != p && d.hasPrefix(prefix) && !d.dropFirst(prefix.count).contains("/") {
                names.append(String(d.dropFirst(prefix.count)))
            }
            return names
        }
    }

    /// See ``FileSystem/itemKind(atPath:)``.
    public func itemKind(atPath path: String) -> FileItemKind? {
        let p = Self.normalize(path)
        return state.withLock { s in
            if s.directories.contains(p) { return .directory }
            if s.files[p] != nil { return .file }
            return nil
        }
    }

    /// See ``FileSystem/open(_:mode:)``.
    public func open(_ path: String, mode: FileOpenMode) throws -> any FileSystemFile {
        let p = Self.normalize(path)
        let node: Node = try state.withLock { s in
            guard s.directories.contains(Self.parent(p)) else { throw LogStoreError(.io, "No such directory.", path: Self.parent(p)) }
            if s.directories.contains(p) { throw LogStoreError(.io, "Is a directory.", path: p) }
            switch mode {
            case .readOnly, .readWrite:
                guard let n = s.files[p] else { throw LogStoreError(.io, "No such file.", path: p) }
                return n
            case .createNew:
                if s.files[p] != nil { throw LogStoreError(.io, "File exists.", path: p) }
                let n = Node()
                s.files[p] = n
                return n
            case .createOrTruncate:
                if let n = s.files[p] {
                    n.data.withLock { $0.removeAll() }
                    return n
                }
                let n = Node()
                s.files[p] = n
                return n
            }
        }
        return InMemoryFile(node: node, path: p, writable: mode != .readOnly)
    }

    /// See ``FileSystem/removeFile(atPath:)``.
    public func removeFile(atPath path: String) throws {
        let p = Self.normalize(path)
        state.withLock { s in _ = s.files.removeValue(forKey: p) }
    }

    /// See ``FileSystem/rename(from:to:)``.
    public func rename(from: String, to: String) throws {
        let f = Self.normalize(from)
        let t = Self.normalize(to)
        try state.withLock { s in
            guard let n = s.files.removeValue(forKey: f) else { throw LogStoreError(.io, "No such file.", path: f) }
            s.files[t] = n
        }
    }

    /// No-op: memory has nothing to sync.
    public func syncDirectory(atPath path: String) throws {}

    /// See ``FileSystem/lock(atPath:)``.
    public func lock(atPath path: String) throws -> any FileSystemLock {
        let p = Self.normalize(path)
        try state.withLock { s in
            if s.locks.contains(p) {
                throw LogStoreError(.locked, "The store is already open (another LogDataStore holds its lock). Close it first.", path: p)
            }
            s.locks.insert(p)
            if s.files[p] == nil { s.files[p] = Node() }
        }
        return InMemoryLock(fs: self, path: p)
    }

    func unlock(_ p: String) { state.withLock { s in _ = s.locks.remove(p) } }
}

final class InMemoryLock: FileSystemLock {
    let fs: InMemoryFileSystem
    let path: String
    let held = Mutex(true)
    init(fs: InMemoryFileSystem, path: String) {
        self.fs = fs
        self.path = path
    }
    deinit { unlock() }
    func unlock() {
        if held.withLock({ h in
            defer { h = false }
            return h
        }) {
            fs.unlock(path)
        }
    }
}

final class InMemoryFile: FileSystemFile {
    let node: InMemoryFileSystem.Node
    let path: String
    let writable: Bool
    let closed = Mutex(false)
    init(node: InMemoryFileSystem.Node, path: String, writable: Bool) {
        self.node = node
        self.path = path
        self.writable = writable
    }
    func check(write: Bool = false) throws {
        if closed.withLock({ $0 }) { throw LogStoreError(.io, "File used after close.", path: path) }
        if write && !writable { throw LogStoreError(.io, "File opened read-only.", path: path) }
    }
    func read(at offset: UInt64, count: Int) throws -> [UInt8] {
        try check()
        return node.data.withLock { d in
            guard offset < UInt64(d.count), count > 0 else { return [] }
            let start = Int(offset)
            return Array(d[start..<min(d.count, start + count)])
        }
    }
    func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        try check(write: true)
        node.data.withLock { d in
            let start = Int(offset)
            let end = start + bytes.count
            if d.count < end { d.append(contentsOf: [UInt8](repeating: 0, count: end - d.count)) }
            d.withUnsafeMutableBytes { dst in
                UnsafeMutableRawBufferPointer(rebasing: dst[start..<end]).copyMemory(from: bytes)
            }
        }
    }
    func size() throws -> UInt64 {
        try check()
        return UInt64(node.data.withLock { $0.count })
    }
    func truncate(to size: UInt64) throws {
        try check(write: true)
        node.data.withLock { d in
            let n = Int(size)
            if d.count > n { d.removeSubrange(n...) } else { d.append(contentsOf: [UInt8](repeating: 0, count: n - d.count)) }
        }
    }
    func sync() throws { try check() }
    func close() throws { closed.withLock { $0 = true } }
}
