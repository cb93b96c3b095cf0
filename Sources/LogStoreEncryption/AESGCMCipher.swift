@preconcurrency import Crypto
public import Foundation
public import LogStoreEngine

/// The store cipher of encryption at rest: AES-256-GCM with 16-byte tags, HKDF-SHA256 subkeys and
/// HMAC-SHA256 checks, through swift-crypto (`Crypto`, which is CryptoKit on Apple platforms).
/// Construction ``StoreCipherAlgorithm/aes256GCM`` (id 1) of FileFormat.md, "Encryption".
///
/// Holds the app's 256-bit store key in memory for as long as the value lives (swift-crypto's
/// `SymmetricKey`, which zeroes its bytes when freed). Thread-safe: an immutable value. (swift-crypto
/// 3 does not mark its immutable `SymmetricKey` `Sendable`: the `@preconcurrency` import says so
/// for this file alone.)
public struct AESGCMCipher: StoreCipher, Sendable {
    let storeKey: SymmetricKey

    /// A cipher for a store whose key is these 32 bytes (`Data`, `[UInt8]`, a CryptoKit or
    /// swift-crypto `SymmetricKey`...). Throws `.invalidArgument` for any other length; the
    /// message gives the length, never the bytes. A passphrase is not a key: derive one first
    /// (PBKDF2, scrypt).
    public init(key: some ContiguousBytes) throws {
        let count = key.withUnsafeBytes { $0.count }
        guard count == StoreCrypto.keyByteCount else {
            throw LogStoreError(
                .invalidArgument,
                "An AES-256-GCM store key is 32 bytes (256 bits); the key given is \(count) bytes. A passphrase must go through a key derivation function (PBKDF2, scrypt) first."
            )
        }
        storeKey = SymmetricKey(data: key)
    }

    /// ``StoreCipherAlgorithm/aes256GCM``.
    public var algorithmID: UInt8 { StoreCipherAlgorithm.aes256GCM }

    /// See ``StoreCipher/deriveKey(salt:info:)``: HKDF-SHA256 of the store key, 32 bytes.
    public func deriveKey(salt: [UInt8], info: [UInt8]) throws -> any AEADKey {
        AESGCMKey(subkey(salt: salt, info: info))
    }

    /// See ``StoreCipher/mac(salt:info:message:)``: HMAC-SHA256 under the HKDF-SHA256 subkey.
    public func mac(salt: [UInt8], info: [UInt8], message: [UInt8]) throws -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: message, using: subkey(salt: salt, info: info)))
    }

    /// See ``StoreCipher/ephemeralKey()``: 256 random bits from the system's generator.
    public func ephemeralKey() throws -> any AEADKey { AESGCMKey(SymmetricKey(size: .bits256)) }

    /// See ``StoreCipher/randomBytes(_:)``: the system's cryptographically secure generator
    /// (`getrandom` on Linux, `arc4random_buf` on Apple platforms).
    public func randomBytes(_ count: Int) -> [UInt8] {
        var g = SystemRandomNumberGenerator()
        var out = [UInt8]()
        out.reserveCapacity(count + 8)
        while out.count < count { withUnsafeBytes(of: g.next()) { out.append(contentsOf: $0) } }
        return Array(out.prefix(count))
    }

    func subkey(salt: [UInt8], info: [UInt8]) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: storeKey, salt: salt, info: info, outputByteCount: StoreCrypto.keyByteCount)
    }

    /// HKDF-SHA256 of `ikm` (RFC 5869), `count` bytes: what ``subkey(salt:info:)`` computes, for
    /// checking against the RFC's vectors.
    static func hkdf(ikm: [UInt8], salt: [UInt8], info: [UInt8], count: Int) -> [UInt8] {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: ikm), salt: salt, info: info, outputByteCount: count)
            .withUnsafeBytes { Array($0) }
    }
}

extension StoreEncryption {
    /// Encryption with AES-256-GCM under `key`, the store's 32-byte key (``AESGCMCipher``); at
    /// open, `additionalKeys` are tried too (the old key while a rekey may have been interrupted).
    /// Throws `.invalidArgument` for a key that is not 32 bytes.
    public static func aes256GCM(key: some ContiguousBytes, additionalKeys: [any ContiguousBytes] = []) throws -> StoreEncryption {
        StoreEncryption(cipher: try AESGCMCipher(key: key), additionalCiphers: try additionalKeys.map { try AESGCMCipher(key: $0) })
    }
}
