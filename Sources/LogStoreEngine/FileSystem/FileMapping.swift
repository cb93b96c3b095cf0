#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A file's first bytes mapped read-only into memory (`mmap(PROT_READ, MAP_SHARED)`): how the
/// engine reads sealed segments without copying them (Docs/Design.md, "Read").
///
/// Only for files nothing writes or truncates any more (sealed segments, invariant 8). The bytes
/// are the file's page cache: a read costs no system call and no copy. A file truncated below the
/// mapped length by something outside LogStore makes a later access of the lost pages raise
/// `SIGBUS` (Docs/Design.md §5, assumption 8), as it would for LMDB's data file.
///
/// Unmapped when the last reference goes away; `bytes` is valid until then, from any thread.
/// `@unchecked Sendable`: the mapping is read-only and never changes after `init`.
package final class FileMapping: @unchecked Sendable {
    /// The mapped bytes: the file's bytes `0 ..< count`.
    package let bytes: UnsafeRawBufferPointer

    init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    deinit {
        if let base = bytes.baseAddress { munmap(UnsafeMutableRawPointer(mutating: base), bytes.count) }
    }
}

/// A file the engine may map (``FileMapping``). ``POSIXFileSystem``'s files are; in-memory and
/// test file systems are not, and their sealed segments are read with ``FileSystemFile/read(at:count:)``.
/// Not public: the public ``FileSystemFile`` protocol does not change.
package protocol MappableFile: FileSystemFile {
    /// Maps the file's first `length` bytes read-only. Throws `.io` if the system refuses (the
    /// caller then reads with `pread`). The caller must know the file holds at least `length`
    /// bytes and that nothing writes to them any more. Any thread.
    func mapReadOnly(length: Int) throws -> FileMapping
}

extension POSIXFile: MappableFile {
    /// See ``MappableFile/mapReadOnly(length:)``.
    package func mapReadOnly(length: Int) throws -> FileMapping {
        guard length > 0 else { return FileMapping(bytes: UnsafeRawBufferPointer(start: nil, count: 0)) }
        let p = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0)
        guard let p, p != MAP_FAILED else { throw _ioError("mmap", errno, path) }
        return FileMapping(bytes: UnsafeRawBufferPointer(start: p, count: length))
    }
}
