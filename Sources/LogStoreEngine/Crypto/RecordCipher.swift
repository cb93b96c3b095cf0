import Synchronization

/// The record keys of an encrypted store: the store key's cipher, the keys of the key epochs the
/// log names, and the epoch this process seals new records under, with its counter
/// (Docs/FileFormatEncryption.md, "Records").
///
/// One per open store, shared by every view through ``MetaTable/cipher``. Each writable open
/// starts a new key epoch: a new id, a random 16-byte salt and so a key no earlier process used,
/// whose counter starts at 0. A record's nonce is its epoch's counter, which only grows while
/// the process runs, so no (key, nonce) pair is ever used twice, even when a crash loses the
/// counter: the next open seals under a new salt. Thread-safe: keys and the counter are behind
/// one lock, held only to look up a key or take a counter value (never while sealing).
package final class RecordCipher: Sendable {
    /// The store key's cipher.
    package let cipher: any StoreCipher
    /// The store the records belong to (part of every record's additional data).
    package let storeID: StoreID
    private let state = Mutex(State())

    private struct State {
        /// Derived epoch keys, by epoch id, with the salt each was derived from.
        var keys: [UInt32: (salt: [UInt8], key: any AEADKey)] = [:]
        /// The epoch new records are sealed under, once chosen.
        var writing: KeyEpoch? = nil
        var writingKey: (any AEADKey)? = nil
        /// The next counter of the writing epoch.
        var counter: UInt64 = 0
    }

    /// Record keys of store `storeID` under `cipher`'s store key.
    package init(cipher: any StoreCipher, storeID: StoreID) {
        self.cipher = cipher
        self.storeID = storeID
    }

    /// Starts a new key epoch for this process's writes: the id after every epoch `meta` knows,
    /// a random salt (`salt` only for the format's worked example, which needs fixed bytes), and
    /// its MAC. Called once per open, after recovery has replayed the log. Throws the cipher's
    /// errors.
    package func startWriting(after meta: MetaTable, salt fixedSalt: [UInt8]? = nil) throws {
        let id = meta.nextEpochID
        let salt = fixedSalt ?? cipher.randomBytes(StoreCrypto.saltByteCount)
        let mac = try StoreCrypto.epochMAC(cipher, storeID: storeID, epoch: id, salt: salt)
        let key = try StoreCrypto.recordKey(cipher, storeID: storeID, epoch: id, salt: salt)
        state.withLock {
            $0.writing = KeyEpoch(id: id, salt: salt, mac: mac, location: nil)
            $0.writingKey = key
            $0.counter = 0
            $0.keys[id] = (salt, key)
        }
    }

    /// The epoch new records are sealed under (nil before ``startWriting(after:)``).
    package var writingEpoch: KeyEpoch? { state.withLock { $0.writing } }

    /// The writing epoch's key and `count` consecutive counters, the first returned. Throws
    /// `.invalidArgument` before ``startWriting(after:)``.
    func takeCounters(_ count: UInt64) throws -> (epoch: UInt32, key: any AEADKey, first: UInt64) {
        try state.withLock { s in
            guard let w = s.writing, let key = s.writingKey else {
                throw LogStoreError(.invalidArgument, "An encrypted store sealed a record before choosing its key epoch.")
            }
            let first = s.counter
            s.counter += count
            return (w.id, key, first)
        }
    }

    /// The key of `epoch` as `meta` defines it. Throws `.corruption` when `meta` has no such
    /// epoch, and the cipher's errors.
    package func key(epoch id: UInt32, meta: MetaTable, path: String?, offset: UInt64) throws -> any AEADKey {
        guard let epoch = meta.epoch(id) else {
            throw LogStoreError(
                .corruption, "The record is sealed under key epoch \(id), which no define before it names.", path: path, offset: offset)
        }
        if let known = state.withLock({ s in s.keys[id].flatMap { $0.salt == epoch.salt ? $0.key : nil } }) { return known }
        let key = try StoreCrypto.recordKey(cipher, storeID: storeID, epoch: id, salt: epoch.salt)
        state.withLock { $0.keys[id] = (epoch.salt, key) }
        return key
    }

    /// Whether `mac` is the MAC of epoch `id` with `salt` under this store key. Throws the
    /// cipher's errors.
    package func verify(epoch id: UInt32, salt: [UInt8], mac: [UInt8]) throws -> Bool {
        StoreCrypto.constantTimeEqual(try StoreCrypto.epochMAC(cipher, storeID: storeID, epoch: id, salt: salt), mac)
    }
}

/// A key epoch's define (FileFormatEncryption.md, "Key epochs"): its id, the salt its record key
/// is derived with, and the MAC that proves the store key wrote it. Immutable.
package struct KeyEpoch: Sendable, Equatable {
    /// The epoch's id (its records name it).
    package var id: UInt32
    /// 16 random bytes: the HKDF salt of the epoch's record key.
    package var salt: [UInt8]
    /// 16 bytes: HMAC-SHA256 under the store's MAC key of the epoch's id and salt.
    package var mac: [UInt8]
    /// Where its define record is (nil: not written yet).
    package var location: RecordLocation?

    /// An epoch define.
    package init(id: UInt32, salt: [UInt8], mac: [UInt8], location: RecordLocation?) {
        self.id = id
        self.salt = salt
        self.mac = mac
        self.location = location
    }

    package static func == (a: KeyEpoch, b: KeyEpoch) -> Bool { a.id == b.id && a.salt == b.salt && a.mac == b.mac }
}
