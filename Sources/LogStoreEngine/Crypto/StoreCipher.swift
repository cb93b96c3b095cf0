/// The cryptography an encrypted store uses: key derivation, MACs, random bytes and an AEAD, behind
/// a protocol so that the engine links no crypto library. The `LogStoreEncryption` product
/// implements it with swift-crypto (`AESGCMCipher`); an app hands one to the store through
/// ``StoreEncryption``.
///
/// The engine owns every use of the protocol (FileFormat.md, "Encryption"): it chooses salts,
/// `info` labels, nonces and additional data, and counts. An implementation only computes, so a
/// careless one cannot make the engine reuse a nonce. The store key never leaves the
/// implementation: the engine sees derived ``AEADKey``s and MACs.
///
/// Implementations are thread-safe (`Sendable`): any thread that reads or writes the store calls
/// them, concurrently.
public protocol StoreCipher: Sendable {
    /// The construction's id on disk, as MANIFEST, segment headers, CHECKPOINT and run files record
    /// it: ``StoreCipherAlgorithm/aes256GCM`` (1) is AES-256-GCM with HKDF-SHA256 subkeys and
    /// HMAC-SHA256 checks. A store opens only with a cipher of the id its MANIFEST names.
    var algorithmID: UInt8 { get }

    /// The HKDF-SHA256 subkey of the store key for `salt` and `info` (32 bytes), as an AEAD key.
    /// Called once per key epoch, run file or checkpoint, never per record. Throws when the
    /// implementation cannot derive a key (its own errors).
    func deriveKey(salt: [UInt8], info: [UInt8]) throws -> any AEADKey

    /// HMAC-SHA256 of `message` under the HKDF-SHA256 subkey of the store key for `salt` and `info`:
    /// all 32 bytes (the engine keeps the first 16). Used for the key check in MANIFEST and the MACs
    /// of key-epoch records. Throws the implementation's errors.
    func mac(salt: [UInt8], info: [UInt8], message: [UInt8]) throws -> [UInt8]

    /// A new random AEAD key that exists only in memory and is never written anywhere: it seals a
    /// spill file, which nobody reads after the process ends. Throws the implementation's errors.
    func ephemeralKey() throws -> any AEADKey

    /// `count` bytes from the system's cryptographically secure random number generator (salts).
    func randomBytes(_ count: Int) -> [UInt8]
}

/// One AEAD key of an encrypted store (a key epoch's record key, a run file's key, a spill file's
/// key): AES-256-GCM with 16-byte tags for ``StoreCipherAlgorithm/aes256GCM``.
///
/// A class, so that an implementation can keep an expanded key context between calls. Thread-safe:
/// reads open records of one epoch from many threads at once. The engine never calls `seal` twice
/// with one nonce (FileFormat.md, "Why no nonce repeats").
public protocol AEADKey: AnyObject, Sendable {
    /// Encrypts `plaintext` with `nonce`, authenticating `aad` too, and writes ciphertext then the
    /// 16-byte tag into `out`, which holds exactly `plaintext.count + 16` bytes. Runs on the
    /// calling thread. Throws `.invalidArgument` for an `out` of another size, and the
    /// implementation's errors.
    func seal(
        _ plaintext: UnsafeRawBufferPointer, nonce: AEADNonce, aad: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer) throws

    /// Checks and decrypts `sealed` (ciphertext then the 16-byte tag) with `nonce` and `aad` into
    /// `out`, which holds exactly `sealed.count - 16` bytes. Returns false, with `out` zeroed, when
    /// the tag does not match (damaged or altered bytes, another key, another nonce or other
    /// additional data): the caller reports corruption. Runs on the calling thread. Throws
    /// `.invalidArgument` for a `sealed` shorter than a tag or an `out` of another size.
    func open(
        _ sealed: UnsafeRawBufferPointer, nonce: AEADNonce, aad: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) throws -> Bool
}

/// The ids of the encryption constructions a store can name on disk (MANIFEST's `cipher` byte).
public enum StoreCipherAlgorithm {
    /// Not encrypted.
    public static let none: UInt8 = 0
    /// AES-256-GCM with 16-byte tags; subkeys by HKDF-SHA256; key check and key-epoch MACs by
    /// HMAC-SHA256 (FileFormat.md, "Encryption").
    public static let aes256GCM: UInt8 = 1
}

/// A 12-byte AEAD nonce: `u64le(value) ‖ 0^4`. Every nonce the engine uses has that form: a
/// record's counter, a run page's number (`u32le(page) ‖ 0^8` is the same bytes), a spill
/// entry's counter, or zero (a checkpoint body, sealed once under its own key).
public struct AEADNonce: Sendable, Hashable, CustomStringConvertible {
    /// The nonce's first 8 bytes, as a little-endian integer; the last 4 are zero.
    public var value: UInt64

    /// The nonce `u64le(value) ‖ 0^4`.
    public init(_ value: UInt64) { self.value = value }

    /// The nonce of zeros.
    public static let zero = AEADNonce(0)

    /// Length in bytes.
    public static let byteCount = 12

    /// The 12 bytes, valid only inside `body`. Runs `body` on the calling thread.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var raw: (UInt64, UInt32) = (value.littleEndian, 0)
        return try Swift.withUnsafeBytes(of: &raw) { try body(UnsafeRawBufferPointer(rebasing: $0[0..<Self.byteCount])) }
    }

    /// The 12 bytes.
    public var bytes: [UInt8] { withUnsafeBytes { Array($0) } }

    /// `AEADNonce(value)`.
    public var description: String { "AEADNonce(\(value))" }
}

extension AEADKey {
    /// `plaintext` sealed: ciphertext then tag (`plaintext.count + 16` bytes). Throws as
    /// ``AEADKey/seal(_:nonce:aad:into:)``.
    package func seal(_ plaintext: [UInt8], nonce: AEADNonce, aad: [UInt8]) throws -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: plaintext.count + StoreCrypto.tagByteCount) { out, count in
            try plaintext.withUnsafeBytes { p in
                try aad.withUnsafeBytes { a in try seal(p, nonce: nonce, aad: a, into: UnsafeMutableRawBufferPointer(out)) }
            }
            count = plaintext.count + StoreCrypto.tagByteCount
        }
    }

    /// The plaintext of `sealed` (ciphertext then tag), or nil when it does not authenticate.
    /// Throws as ``AEADKey/open(_:nonce:aad:into:)``.
    package func open(_ sealed: some Collection<UInt8>, nonce: AEADNonce, aad: [UInt8]) throws -> [UInt8]? {
        guard sealed.count >= StoreCrypto.tagByteCount else { return nil }
        let bytes = Array(sealed)
        var plain = [UInt8](repeating: 0, count: bytes.count - StoreCrypto.tagByteCount)
        let ok = try plain.withUnsafeMutableBytes { out in
            try bytes.withUnsafeBytes { s in try aad.withUnsafeBytes { a in try open(s, nonce: nonce, aad: a, into: out) } }
        }
        return ok ? plain : nil
    }
}
