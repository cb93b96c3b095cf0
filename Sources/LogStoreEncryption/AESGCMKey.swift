@preconcurrency import Crypto
import Foundation
import LogStoreEngine

/// An AES-256-GCM key of ``AESGCMCipher`` (an HKDF subkey or a spill file's random key).
///
/// swift-crypto keeps no cipher context between calls: each `seal` and `open` sets up the key
/// schedule again (FileFormat.md, "Encryption", and Docs/Performance.md for the measured cost).
/// A class, as ``AEADKey`` requires, so that a context-keeping implementation of the same bytes
/// can replace this one. Thread-safe: immutable. (swift-crypto 3 does not mark its immutable
/// `SymmetricKey` `Sendable`: the `@preconcurrency` import says so for this file alone.)
final class AESGCMKey: AEADKey, Sendable {
    let key: SymmetricKey

    init(_ key: SymmetricKey) { self.key = key }

    func seal(
        _ plaintext: UnsafeRawBufferPointer, nonce: AEADNonce, aad: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) throws {
        guard out.count == plaintext.count + StoreCrypto.tagByteCount else {
            throw LogStoreError(.invalidArgument, "AEAD seal: the output holds \(out.count) bytes, not plaintext + 16.")
        }
        let box = try AES.GCM.seal(plaintext, using: key, nonce: try Self.nonce(nonce), authenticating: aad)
        // `combined` is nonce ‖ ciphertext ‖ tag in one buffer (always present for 12-byte nonces).
        guard let combined = box.combined else {
            throw LogStoreError(.invalidArgument, "AEAD seal: no combined representation for a 12-byte nonce.")
        }
        combined.withUnsafeBytes { c in
            out.copyMemory(from: UnsafeRawBufferPointer(rebasing: c[AEADNonce.byteCount...]))
        }
    }

    func open(
        _ sealed: UnsafeRawBufferPointer, nonce: AEADNonce, aad: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) throws -> Bool {
        guard sealed.count >= StoreCrypto.tagByteCount, out.count == sealed.count - StoreCrypto.tagByteCount else {
            throw LogStoreError(.invalidArgument, "AEAD open: \(sealed.count) sealed bytes do not fit an output of \(out.count).")
        }
        // One buffer nonce ‖ ciphertext ‖ tag (on the stack when small) for `SealedBox(combined:)`,
        // which copies it with one memcpy; `SealedBox(nonce:ciphertext:tag:)` appends the three
        // parts to a `Data` through its generic path, a quarter of the whole call (callgrind).
        let plain: Data
        do {
            plain = try withUnsafeTemporaryAllocation(byteCount: AEADNonce.byteCount + sealed.count, alignment: 8) { combined in
                nonce.withUnsafeBytes { combined.copyMemory(from: $0) }
                UnsafeMutableRawBufferPointer(rebasing: combined[AEADNonce.byteCount...]).copyMemory(from: sealed)
                let box = try AES.GCM.SealedBox(combined: UnsafeRawBufferPointer(combined))
                return try AES.GCM.open(box, using: key, authenticating: aad)
            }
        } catch let error as CryptoKitError {
            // CryptoKit reports a tag mismatch as `authenticationFailure`; swift-crypto on Linux as
            // BoringSSL's CIPHER_R_BAD_DECRYPT in `underlyingCoreCryptoError`. Sizes were checked
            // above, so no other failure is expected; any other is rethrown.
            switch error {
            case .authenticationFailure, .underlyingCoreCryptoError:
                if let base = out.baseAddress { base.initializeMemory(as: UInt8.self, repeating: 0, count: out.count) }
                return false
            default: throw error
            }
        }
        guard plain.count == out.count else { return false }
        plain.withUnsafeBytes { out.copyMemory(from: $0) }
        return true
    }

    static func nonce(_ n: AEADNonce) throws -> AES.GCM.Nonce {
        try n.withUnsafeBytes { try AES.GCM.Nonce(data: $0) }
    }
}
