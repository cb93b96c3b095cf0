import Foundation
import Synchronization

/// A temporary value log for changes that outgrew memory: a child store's
/// (``LogStoreOptions/childSpillThreshold``, file `child-<uuid>.tmp` in the root store's
/// directory) and a large write transaction's (``LogStoreOptions/transactionSpillThreshold``,
/// `txn-<uuid>.tmp`). Removed when its owner goes away (the child is torn down, merged away or
/// released; the transaction commits or rolls back), and by recovery on the next open after a
/// crash (every `*.tmp` file is).
///
///     entry := crc:u32le (masked CRC-32C of value) length:u32le value
///
/// Thread-safe: appends are serialized by `end`'s mutex; reads are positional, from any thread.
package final class SpillFile: ExternalValues {
    let fs: any FileSystem
    let file: any FileSystemFile
    let path: String
    let end = Mutex<UInt64>(0)

    /// Creates a new, empty spill file `<prefix>-<uuid>.tmp` in `directory`. Throws the file
    /// system's errors.
    package init(directory: String, fs: any FileSystem, prefix: String = "child") throws {
        self.fs = fs
        path = _joinPath(directory, "\(prefix)-\(UUID().uuidString).tmp")
        file = try fs.open(path, mode: .createNew)
    }

    deinit {
        try? file.close()
        remove()
    }

    /// See `ExternalValues.append(_:)`.
    package func append(_ bytes: [UInt8]) throws -> (offset: UInt64, length: UInt32) {
        var w = _ByteWriter(capacity: bytes.count + 8)
        w.u32(CRC32C.mask(CRC32C.checksum(bytes)))
        w.u32(UInt32(bytes.count))
        w.append(contentsOf: bytes)
        return try end.withLock { e in
            try file.write(w.bytes, at: e)
            let at = e + 8
            e += UInt64(w.count)
            return (at, UInt32(bytes.count))
        }
    }

    /// See `ExternalValues.read(offset:length:)`.
    package func read(offset: UInt64, length: UInt32) throws -> [UInt8] {
        guard offset >= 8 else { throw LogStoreError(.corruption, "Bad spill offset.", path: path, offset: offset) }
        let raw = try file.read(at: offset - 8, count: Int(length) + 8)
        guard raw.count == Int(length) + 8 else { throw LogStoreError(.corruption, "Spill file is shorter than expected.", path: path, offset: offset) }
        let stored = raw.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self).littleEndian }
        let value = Array(raw[8...])
        guard CRC32C.mask(CRC32C.checksum(value)) == stored else {
            throw LogStoreError(.corruption, "Spill file checksum mismatch.", path: path, offset: offset)
        }
        return value
    }

    /// Unlinks the file. Readers holding this object keep reading through the open descriptor.
    package func remove() {
        try? fs.removeFile(atPath: path)
    }
}
