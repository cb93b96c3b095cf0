import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Exchanges two directories atomically: after the call each path names what the other named,
/// and no crash can leave either path missing. Linux: `renameat2(..., RENAME_EXCHANGE)` (looked up
/// at run time: the C library may not declare it); macOS: `renamex_np(..., RENAME_SWAP)`.
enum DirectoryExchange {
    /// Exchanges `a` and `b`. Throws an `.io` failure (naming `a`) when the system or the file
    /// system cannot exchange them, with how to proceed instead.
    static func exchange(_ a: String, _ b: String) throws {
        let status = a.withCString { pa in b.withCString { pb in swap(pa, pb) } }
        guard status == 0 else {
            let code = errno
            throw ToolFailure(
                .io,
                "Cannot exchange the rewritten store with the store atomically (\(String(cString: strerror(code)))): the store is unchanged. On a file system that cannot, write an encrypted copy with logstore-migrate and point the app at it.",
                path: a)
        }
    }

    #if canImport(Glibc)
        /// `renameat2`'s C signature.
        private typealias RenameAt2 = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32

        private static func swap(_ a: UnsafePointer<CChar>, _ b: UnsafePointer<CChar>) -> Int32 {
            let renameExchange: UInt32 = 1 << 1
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "renameat2") else {
                errno = ENOSYS
                return -1
            }
            let renameat2 = unsafeBitCast(symbol, to: RenameAt2.self)
            return renameat2(AT_FDCWD, a, AT_FDCWD, b, renameExchange)
        }
    #else
        private static func swap(_ a: UnsafePointer<CChar>, _ b: UnsafePointer<CChar>) -> Int32 {
            renamex_np(a, b, UInt32(RENAME_SWAP))
        }
    #endif
}
