/// The one way the engine replaces a whole file (MANIFEST, CHECKPOINT, a new store's first
/// segment): write `NAME.tmp`, fsync it, rename it over `NAME`, fsync the directory.
///
/// A crash at any step leaves either the old file or the new one, never a mix; a leftover
/// `NAME.tmp` is ignored (and overwritten) by the next replace. What a failure means depends on
/// the step it happened at, so callers get that step back (``Failure``) and decide: before the
/// rename nothing changed; at the rename the outcome is unknown (look at the file); after it the
/// new file is in place but its directory entry may not survive a power loss.
enum AtomicFileReplace {
    /// Where a replace failed, with the file system's error.
    enum Failure: Error {
        /// Writing or syncing the temporary file failed. `NAME` is unchanged; the temporary file
        /// was removed (best effort).
        case beforeRename(any Error)
        /// The rename reported an error. Whether `NAME` is the old or the new file is unknown.
        case rename(any Error)
        /// The new file is in place, but fsync of the directory failed: a power loss may bring
        /// the old one back.
        case directorySync(any Error)

        /// The file system's error.
        var underlying: any Error {
            switch self {
            case .beforeRename(let e), .rename(let e), .directorySync(let e): return e
            }
        }
    }

    /// Replaces `directory/name` with `bytes`. Runs on the caller's thread; blocks for two fsyncs.
    static func replace(_ name: String, in directory: String, with bytes: [UInt8], fs: any FileSystem) throws(Failure) {
        let path = _joinPath(directory, name)
        let tmp = path + ".tmp"
        do {
            let f = try fs.open(tmp, mode: .createOrTruncate)
            do {
                try f.write(bytes, at: 0)
                try f.sync()
                try f.close()
            } catch {
                try? f.close()
                throw error
            }
        } catch {
            try? fs.removeFile(atPath: tmp)
            throw .beforeRename(error)
        }
        do { try fs.rename(from: tmp, to: path) } catch { throw .rename(error) }
        do { try fs.syncDirectory(atPath: directory) } catch { throw .directorySync(error) }
    }

    /// Replaces the file and rethrows any failure as the file system's own error (for callers to
    /// whom every failed step means the same: a failed replace, to be reported).
    static func replaceOrThrow(_ name: String, in directory: String, with bytes: [UInt8], fs: any FileSystem) throws {
        do { try replace(name, in: directory, with: bytes, fs: fs) } catch { throw error.underlying }
    }

    /// Whether `directory/name` holds exactly `bytes` (false if it cannot be read): how a caller
    /// whose rename failed learns which file is in place.
    static func holds(_ name: String, in directory: String, _ bytes: [UInt8], fs: any FileSystem) -> Bool {
        guard let f = try? fs.open(_joinPath(directory, name), mode: .readOnly) else { return false }
        defer { try? f.close() }
        guard let size = try? f.size(), size == UInt64(bytes.count) else { return false }
        return (try? f.read(at: 0, count: bytes.count)) == bytes
    }
}
