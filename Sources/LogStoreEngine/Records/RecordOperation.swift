/// One change in a transaction: the unit the log stores and replays.
public enum RecordOperation: Sendable, Equatable {
    /// Insert or replace the record `key` of `type` with `value` (an encoded ``AttributeValue``).
    case put(type: String, key: RecordKey, value: [UInt8])
    /// Delete the record `key` of `type` (a tombstone).
    case delete(type: String, key: RecordKey)
    /// Delete every record of `type` that exists when the operation is replayed (one log entry).
    case deleteAll(type: String)

    /// The record's operation tag on disk. Part of the file format: never renumber or reuse.
    public enum Tag: UInt8, Sendable {
        /// `put`
        case put = 0x01
        /// `delete`
        case delete = 0x02
        /// `deleteAll`
        case deleteAll = 0x03
        /// `putAt`: a put that carries its own sequence number. Written only by compaction, and
        /// only into compacted segments (see ``CompactedRecord``); never produced by a write.
        case putAt = 0x04
    }

    /// The item type the operation applies to.
    public var type: String {
        switch self {
        case .put(let t, _, _), .delete(let t, _), .deleteAll(let t): return t
        }
    }

    /// Encodes the record (Docs/FileFormat.md, "Records"):
    ///
    ///     record := op:u8 type:string [key:bytes] [value:bytes]
    ///     string := uvarint-len utf8      bytes := uvarint-len bytes
    ///     put: type key value   delete: type key   deleteAll: type
    ///     putAt (tag 0x04, compacted segments only): type key sequence:uvarint value
    ///
    /// Returns the offset of the value bytes within `w` (for `put`), else nil.
    @discardableResult
    package func encode(into w: inout _ByteWriter) -> Int? {
        switch self {
        case .put(let type, let key, let value):
            w.u8(Tag.put.rawValue)
            w.string(type)
            key.withUnsafeBytes { w.lengthPrefixed($0) }
            w.uvarint(UInt64(value.count))
            let at = w.count
            w.append(contentsOf: value)
            return at
        case .delete(let type, let key):
            w.u8(Tag.delete.rawValue)
            w.string(type)
            key.withUnsafeBytes { w.lengthPrefixed($0) }
            return nil
        case .deleteAll(let type):
            w.u8(Tag.deleteAll.rawValue)
            w.string(type)
            return nil
        }
    }

    /// An upper bound of the encoded size.
    package var encodedSizeBound: Int {
        switch self {
        case .put(let t, let k, let v): return 1 + 10 + t.utf8.count + 10 + k.count + 10 + v.count
        case .delete(let t, let k): return 1 + 10 + t.utf8.count + 10 + k.count
        case .deleteAll(let t): return 1 + 10 + t.utf8.count
        }
    }
}

/// A record decoded from a frame payload, with the position of its value bytes in the payload.
package struct DecodedRecord {
    package var op: RecordOperation.Tag
    package var type: String
    package var key: RecordKey
    package var valueOffset: Int
    package var valueLength: Int
    /// For `putAt`: the record's own sequence number; 0 for every other operation.
    package var sequence: UInt64 = 0
}

/// The record compaction writes (Docs/FileFormat.md, "Records"; Docs/Compaction.md):
///
///     putAt := op:u8 = 0x04  type:string  key:bytes  sequence:uvarint  value:bytes
///
/// It is a `put` that keeps the sequence number of the transaction that originally wrote the
/// record, so the index's `RecordLocation.sequence` survives compaction. Valid only inside a
/// compacted segment (segment header flag `compacted`), where every record is a `putAt`.
package enum CompactedRecord {
    /// Appends a `putAt`; returns the offset of the value bytes within `w`.
    package static func encode(
        type: String, key: RecordKey, sequence: UInt64, value: UnsafeRawBufferPointer,
        into w: inout _ByteWriter
    ) -> Int {
        w.u8(RecordOperation.Tag.putAt.rawValue)
        w.string(type)
        key.withUnsafeBytes { w.lengthPrefixed($0) }
        w.uvarint(sequence)
        w.uvarint(UInt64(value.count))
        let at = w.count
        w.append(contentsOf: value)
        return at
    }

    /// The exact encoded size of a `putAt` (used to size frames and to estimate live bytes).
    package static func size(typeBytes: Int, keyBytes: Int, sequence: UInt64, valueBytes: Int) -> Int {
        1 + uvarintSize(UInt64(typeBytes)) + typeBytes + uvarintSize(UInt64(keyBytes)) + keyBytes
            + uvarintSize(sequence) + uvarintSize(UInt64(valueBytes)) + valueBytes
    }

    /// Bytes LEB128 takes for `v`.
    package static func uvarintSize(_ v: UInt64) -> Int {
        var n = 1
        var v = v
        while v >= 0x80 {
            v >>= 7
            n += 1
        }
        return n
    }
}

extension DecodedRecord {
    /// Decodes every record of a frame payload (the grammar of ``RecordOperation/encode(into:)``,
    /// repeated to the end of the payload).
    package static func decodeAll(_ payload: UnsafeRawBufferPointer, _ body: (DecodedRecord) throws -> Void) throws {
        var r = _ByteReader(payload)
        var typeCache: (bytes: [UInt8], string: String)? = nil
        while !r.isAtEnd {
            let at = r.offset
            let raw: UInt8
            let typeBytes: UnsafeRawBufferPointer
            do {
                raw = try r.u8()
                typeBytes = try r.lengthPrefixed()
            } catch {
                throw LogStoreError(.corruption, "Malformed record: \(error.reason).", offset: UInt64(error.offset))
            }
            guard let op = RecordOperation.Tag(rawValue: raw) else {
                throw LogStoreError(.corruption, "Unknown record operation 0x\(String(raw, radix: 16)).", offset: UInt64(at))
            }
            // Transactions usually touch one type: decode its name once.
            let type: String
            if let c = typeCache, c.bytes.elementsEqual(typeBytes) {
                type = c.string
            } else {
                guard let s = String(validating: typeBytes, as: UTF8.self) else {
                    throw LogStoreError(.corruption, "Invalid UTF-8 in a record's type name.", offset: UInt64(at))
                }
                type = s
                typeCache = (Array(typeBytes), s)
            }
            do {
                switch op {
                case .put:
                    let key = RecordKey(try r.lengthPrefixed())
                    let len = try r.length()
                    let valueAt = r.offset
                    _ = try r.bytes(len)
                    try body(DecodedRecord(op: op, type: type, key: key, valueOffset: valueAt, valueLength: len))
                case .delete:
                    let key = RecordKey(try r.lengthPrefixed())
                    try body(DecodedRecord(op: op, type: type, key: key, valueOffset: 0, valueLength: 0))
                case .deleteAll:
                    try body(DecodedRecord(op: op, type: type, key: RecordKey([]), valueOffset: 0, valueLength: 0))
                case .putAt:
                    let key = RecordKey(try r.lengthPrefixed())
                    let sequence = try r.uvarint()
                    let len = try r.length()
                    let valueAt = r.offset
                    _ = try r.bytes(len)
                    try body(DecodedRecord(op: op, type: type, key: key, valueOffset: valueAt, valueLength: len, sequence: sequence))
                }
            } catch let e as _DecodeError {
                throw LogStoreError(.corruption, "Malformed record: \(e.reason).", offset: UInt64(e.offset))
            }
        }
    }
}
