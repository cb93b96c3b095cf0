/// The byte-exact inputs of every cryptographic operation of an encrypted store (FileFormat.md,
/// "Encryption"): the HKDF `info` labels that keep each purpose's keys apart, the nonces, the
/// additional data (AAD) that ties a sealed message to its place, and the key check. Pure
/// functions of their arguments; a change to any of them makes existing encrypted stores
/// unreadable, so the tests pin their bytes.
///
///     subkey       salt            info                                          nonce              AAD
///     K_check      storeId         "LogStore 4 key check"                        (HMAC)
///     K_mac        storeId         "LogStore 4 epoch mac"                        (HMAC)
///     K_e          salt_e          "LogStore 4 records" ‖ storeId ‖ u32le(e)     u64le(counter)‖0^4 "LS4R" ‖ storeId ‖ clear header
///     K_run        the run's salt  "LogStore 4 run" ‖ storeId ‖ u32le(run)       u32le(page)‖0^8    "LS4P" ‖ u32le(run) ‖ u32le(page)
///     K_cp         its salt        "LogStore 4 checkpoint" ‖ storeId             0^12               CHECKPOINT bytes before the body
///     spill key    (random, never written)                                       u64le(counter)‖0^4 "LS4S"
package enum StoreCrypto {
    /// Bytes of an AEAD tag.
    package static let tagByteCount = 16
    /// Bytes of a store key (AES-256).
    package static let keyByteCount = 32
    /// Bytes of the random salt of a key epoch, run file or checkpoint.
    package static let saltByteCount = 16
    /// Bytes of MANIFEST's key check and of a key-epoch MAC (HMAC-SHA256, truncated).
    package static let macByteCount = 16

    /// `info` of K_check.
    package static let keyCheckInfo = Array("LogStore 4 key check".utf8)
    /// The message K_check authenticates; its HMAC's first 16 bytes are MANIFEST's `keyCheck`.
    package static let keyCheckMessage = Array("LogStore key check".utf8)
    /// `info` of K_mac.
    package static let epochMACInfo = Array("LogStore 4 epoch mac".utf8)
    /// `info` prefix of a key epoch's record key.
    package static let recordKeyLabel = Array("LogStore 4 records".utf8)
    /// `info` prefix of a run file's key.
    package static let runKeyLabel = Array("LogStore 4 run".utf8)
    /// `info` prefix of a checkpoint's key.
    package static let checkpointKeyLabel = Array("LogStore 4 checkpoint".utf8)
    /// AAD prefix of a sealed record.
    package static let recordAADTag = Array("LS4R".utf8)
    /// AAD prefix of a sealed run page.
    package static let pageAADTag = Array("LS4P".utf8)
    /// AAD of a spill file entry.
    package static let spillAAD = Array("LS4S".utf8)
    /// Prefix of the message a key-epoch define's MAC covers.
    package static let epochMACTag = Array("LS4E".utf8)

    // MARK: info labels

    /// `"LogStore 4 records" ‖ storeId ‖ u32le(epoch)`: the `info` of key epoch `epoch`'s record key.
    package static func recordKeyInfo(storeID: StoreID, epoch: UInt32) -> [UInt8] {
        recordKeyLabel + storeID.bytes + le32(epoch)
    }

    /// `"LogStore 4 run" ‖ storeId ‖ u32le(runNumber)`: the `info` of a run file's key.
    package static func runKeyInfo(storeID: StoreID, runNumber: UInt32) -> [UInt8] {
        runKeyLabel + storeID.bytes + le32(runNumber)
    }

    /// `"LogStore 4 checkpoint" ‖ storeId`: the `info` of a checkpoint's key.
    package static func checkpointKeyInfo(storeID: StoreID) -> [UInt8] {
        checkpointKeyLabel + storeID.bytes
    }

    // MARK: nonces

    /// The nonce of a sealed record: its epoch's counter, `u64le(counter) ‖ 0^4`.
    package static func recordNonce(counter: UInt64) -> AEADNonce { AEADNonce(counter) }

    /// The nonce of run page `page`: `u32le(page) ‖ 0^8`.
    package static func pageNonce(page: UInt32) -> AEADNonce { AEADNonce(UInt64(page)) }

    /// The nonce of a CHECKPOINT body: zeros (each CHECKPOINT has a key of its own).
    package static let checkpointNonce = AEADNonce.zero

    /// The nonce of a spill entry: the file's counter, `u64le(counter) ‖ 0^4`.
    package static func spillNonce(counter: UInt64) -> AEADNonce { AEADNonce(counter) }

    // MARK: additional data

    /// `"LS4R" ‖ storeId ‖ clearHeader`: the AAD of a sealed record, whose clear header is every
    /// body byte before the ciphertext (op, form, epoch, counter, dictionary id; a define's kind
    /// and id), so none of them can change without the record failing to open.
    package static func recordAAD(storeID: StoreID, clearHeader: some Collection<UInt8>) -> [UInt8] {
        var aad = recordAADTag
        aad.reserveCapacity(recordAADTag.count + storeID.bytes.count + clearHeader.count)
        aad += storeID.bytes
        aad += clearHeader
        return aad
    }

    /// `"LS4P" ‖ u32le(runNumber) ‖ u32le(page)`: the AAD of a sealed run page, which ties the page
    /// to its run and position.
    package static func pageAAD(runNumber: UInt32, page: UInt32) -> [UInt8] {
        pageAADTag + le32(runNumber) + le32(page)
    }

    /// `"LS4E" ‖ storeId ‖ u32le(epoch) ‖ salt`: what a key-epoch define's MAC covers.
    package static func epochMACMessage(storeID: StoreID, epoch: UInt32, salt: [UInt8]) -> [UInt8] {
        epochMACTag + storeID.bytes + le32(epoch) + salt
    }

    // MARK: keys and checks

    /// MANIFEST's `keyCheck` for `cipher`'s key in the store `storeID`:
    /// `HMAC-SHA256(K_check, "LogStore key check")[0..<16]`. Throws the cipher's errors.
    package static func keyCheck(_ cipher: any StoreCipher, storeID: StoreID) throws -> [UInt8] {
        try truncatedMAC(cipher.mac(salt: storeID.bytes, info: keyCheckInfo, message: keyCheckMessage))
    }

    /// The MAC of key epoch `epoch`'s define: `HMAC-SHA256(K_mac, "LS4E" storeId u32le(epoch) salt)[0..<16]`.
    /// Throws the cipher's errors.
    package static func epochMAC(_ cipher: any StoreCipher, storeID: StoreID, epoch: UInt32, salt: [UInt8]) throws -> [UInt8] {
        try truncatedMAC(
            cipher.mac(salt: storeID.bytes, info: epochMACInfo, message: epochMACMessage(storeID: storeID, epoch: epoch, salt: salt)))
    }

    /// Key epoch `epoch`'s record key K_e. Throws the cipher's errors.
    package static func recordKey(_ cipher: any StoreCipher, storeID: StoreID, epoch: UInt32, salt: [UInt8]) throws -> any AEADKey {
        try cipher.deriveKey(salt: salt, info: recordKeyInfo(storeID: storeID, epoch: epoch))
    }

    /// Run file `runNumber`'s key K_run. Throws the cipher's errors.
    package static func runKey(_ cipher: any StoreCipher, storeID: StoreID, runNumber: UInt32, salt: [UInt8]) throws -> any AEADKey {
        try cipher.deriveKey(salt: salt, info: runKeyInfo(storeID: storeID, runNumber: runNumber))
    }

    /// A checkpoint's key K_cp. Throws the cipher's errors.
    package static func checkpointKey(_ cipher: any StoreCipher, storeID: StoreID, salt: [UInt8]) throws -> any AEADKey {
        try cipher.deriveKey(salt: salt, info: checkpointKeyInfo(storeID: storeID))
    }

    /// Whether two byte strings are equal, in time that depends only on their lengths (for MACs).
    package static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in a.indices { diff |= a[i] ^ b[i] }
        return diff == 0
    }

    static func truncatedMAC(_ mac: [UInt8]) throws -> [UInt8] {
        guard mac.count >= macByteCount else {
            throw LogStoreError(.invalidArgument, "A StoreCipher returned a MAC of \(mac.count) bytes; HMAC-SHA256 gives 32.")
        }
        return Array(mac[0..<macByteCount])
    }

    static func le32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }
}
