import Foundation
import Synchronization

/// A temporary value log for changes that outgrew memory: a child store's
/// (``LogEngineOptions/childSpillThreshold``, file `child-<uuid>.tmp` in the root store's
/// directory) and a large write transaction's (``LogEngineOptions/transactionSpillThreshold``,
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

    /// See `ExternalValues.append(contentsOf:)`: the entries of `values` in one write.
    package func append(contentsOf values: [[UInt8]]) throws -> [(offset: UInt64, length: UInt32)] {
        var w = _ByteWriter(capacity: values.reduce(0) { $0 + $1.count + 8 })
        var relative: [(offset: UInt64, length: UInt32)] = []
        relative.reserveCapacity(values.count)
        for bytes in values {
            w.u32(CRC32C.mask(CRC32C.checksum(bytes)))
            w.u32(UInt32(bytes.count))
            relative.append((UInt64(w.count), UInt32(bytes.count)))
            w.append(contentsOf: bytes)
        }
        return try end.withLock { e in
            try file.write(w.bytes, at: e)
            let base = e
            e += UInt64(w.count)
            return relative.map { (base + $0.offset, $0.length) }
        }
    }

    /// The last block read ahead (``readAheadBytes``) and where the last value read ended: values
    /// read in the order they were appended (a large transaction's commit, which reads in key
    /// order what was spilled in key order) cost one read per block; a value read out of that
    /// order is read alone (reading a block ahead for it would copy a MiB per value).
    let block = Mutex<(start: UInt64, bytes: [UInt8], lastEnd: UInt64)>((0, [], 0))
    static let readAheadBytes = 1 << 20

    /// See `ExternalValues.read(offset:length:)`.
    package func read(offset: UInt64, length: UInt32) throws -> [UInt8] {
        guard offset >= 8 else { throw LogStoreError(.corruption, "Bad spill offset.", path: path, offset: offset) }
        let start = offset - 8
        let count = Int(length) + 8
        let (cached, sequential) = block.withLock { b -> ([UInt8]?, Bool) in
            let sequential = start == b.lastEnd
            b.lastEnd = start + UInt64(count)
            guard start >= b.start, start + UInt64(count) <= b.start + UInt64(b.bytes.count) else { return (nil, sequential) }
            let from = Int(start - b.start)
            return (Array(b.bytes[from..<(from + count)]), sequential)
        }
        var raw: [UInt8]
        if let cached {
            raw = cached
        } else if sequential && count < Self.readAheadBytes {
            let readBlock = try file.read(at: start, count: Self.readAheadBytes)
            guard readBlock.count >= count else {
                throw LogStoreError(.corruption, "Spill file is shorter than expected.", path: path, offset: offset)
            }
            raw = Array(readBlock[0..<count])
            block.withLock {
                $0.start = start
                $0.bytes = readBlock
            }
        } else {
            raw = try file.read(at: start, count: count)
            guard raw.count == count else {
                throw LogStoreError(.corruption, "Spill file is shorter than expected.", path: path, offset: offset)
            }
        }
        let stored = raw.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self).littleEndian }
        raw.removeFirst(8)
        guard CRC32C.mask(CRC32C.checksum(raw)) == stored else {
            throw LogStoreError(.corruption, "Spill file checksum mismatch.", path: path, offset: offset)
        }
        return raw
    }

    /// Unlinks the file. Readers holding this object keep reading through the open descriptor.
    package func remove() {
        try? fs.removeFile(atPath: path)
    }
}
