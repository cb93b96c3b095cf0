import Foundation
import Synchronization

/// A temporary value log for changes that outgrew memory: a child store's
/// (``LogEngineOptions/childSpillThreshold``, file `child-<uuid>.tmp` in the root store's
/// directory) and a large write transaction's (``LogEngineOptions/transactionSpillThreshold``,
/// `txn-<uuid>.tmp`). Removed when its owner goes away (the child is torn down, merged away or
/// released; the transaction commits or rolls back), and by recovery on the next open after a
/// crash (every `*.tmp` file is).
///
///     entry        := crc:u32le length:u32le body               -- crc: masked CRC-32C of body; length: the value's
///     body (clear) := value
///     body (sealed):= counter:u64le AEAD(value)                 -- ciphertext (length bytes) then tag:16
///
/// An encrypted store's spill files are sealed (AES-256-GCM through its ``StoreCipher``) under a
/// key drawn at random for the file, which exists only in this object and is never written: once
/// the process ends, nobody can read the file. Each entry's nonce is the file's counter
/// (`u64le(counter) ‖ 0^4`, from 1, never reused), its additional data `"LS4S"`.
///
/// Thread-safe: appends are serialized by `end`'s mutex; reads are positional, from any thread.
package final class SpillFile: ExternalValues {
    let fs: any FileSystem
    let file: any FileSystemFile
    let path: String
    let end = Mutex<UInt64>(0)
    /// The file's key, when it is sealed.
    let key: (any AEADKey)?
    /// The last nonce counter used (sealed files).
    let counter = Atomic<UInt64>(0)

    /// Creates a new, empty spill file `<prefix>-<uuid>.tmp` in `directory`, sealed under a new
    /// ephemeral key of `cipher` when one is given (an encrypted store's). Throws the file
    /// system's and the cipher's errors.
    package init(directory: String, fs: any FileSystem, prefix: String = "child", cipher: (any StoreCipher)? = nil) throws {
        self.fs = fs
        key = try cipher?.ephemeralKey()
        path = _joinPath(directory, "\(prefix)-\(UUID().uuidString).tmp")
        file = try fs.open(path, mode: .createNew)
    }

    /// Whether entries are sealed.
    package var isSealed: Bool { key != nil }

    /// Bytes an entry's body adds to its value: a sealed one's counter and tag.
    var sealOverhead: Int { key == nil ? 0 : 8 + StoreCrypto.tagByteCount }

    deinit {
        try? file.close()
        remove()
    }

    /// See `ExternalValues.append(contentsOf:)`: the entries of `values` in one write (sealed
    /// first when the file is).
    package func append(contentsOf values: [[UInt8]]) throws -> [(offset: UInt64, length: UInt32)] {
        let overhead = sealOverhead
        var w = _ByteWriter(capacity: values.reduce(0) { $0 + $1.count + 8 + overhead })
        var relative: [(offset: UInt64, length: UInt32)] = []
        relative.reserveCapacity(values.count)
        for bytes in values {
            let body = try key.map { try seal(bytes, with: $0) } ?? bytes
            w.u32(CRC32C.mask(CRC32C.checksum(body)))
            w.u32(UInt32(bytes.count))
            relative.append((UInt64(w.count), UInt32(bytes.count)))
            w.append(contentsOf: body)
        }
        return try end.withLock { e in
            try file.write(w.bytes, at: e)
            let base = e
            e += UInt64(w.count)
            return relative.map { (base + $0.offset, $0.length) }
        }
    }

    /// `counter:u64le ciphertext tag` of `value` under the file's next counter.
    func seal(_ value: [UInt8], with key: any AEADKey) throws -> [UInt8] {
        let n = counter.wrappingAdd(1, ordering: .relaxed).newValue
        let nonce = StoreCrypto.spillNonce(counter: n)
        return try [UInt8](unsafeUninitializedCapacity: 8 + value.count + StoreCrypto.tagByteCount) { out, count in
            let raw = UnsafeMutableRawBufferPointer(out)
            raw.storeBytes(of: n.littleEndian, as: UInt64.self)
            try value.withUnsafeBytes { v in
                try StoreCrypto.spillAAD.withUnsafeBytes { aad in
                    try key.seal(v, nonce: nonce, aad: aad, into: UnsafeMutableRawBufferPointer(rebasing: raw[8...]))
                }
            }
            count = raw.count
        }
    }

    /// The value of a sealed body (`counter ciphertext tag`), or a `.corruption` error when it
    /// does not authenticate.
    func open(_ body: [UInt8], with key: any AEADKey, offset: UInt64) throws -> [UInt8] {
        guard body.count >= 8 + StoreCrypto.tagByteCount else {
            throw LogStoreError(.corruption, "A sealed spill entry is too short.", path: path, offset: offset)
        }
        let n = body.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self).littleEndian }
        let plain = try body.withUnsafeBytes { raw in
            try key.open(UnsafeRawBufferPointer(rebasing: raw[8...]), nonce: StoreCrypto.spillNonce(counter: n), aad: StoreCrypto.spillAAD)
        }
        guard let plain else {
            throw LogStoreError(.corruption, "A sealed spill entry failed authentication.", path: path, offset: offset)
        }
        return plain
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
        let count = Int(length) + 8 + sealOverhead
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
        guard let key else { return raw }
        return try open(raw, with: key, offset: offset)
    }

    /// Unlinks the file. Readers holding this object keep reading through the open descriptor.
    package func remove() {
        try? fs.removeFile(atPath: path)
    }
}
