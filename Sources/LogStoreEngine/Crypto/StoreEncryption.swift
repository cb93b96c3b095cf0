/// Whether a store is encrypted at rest, and with which key: ``LogEngineOptions/encryption``
/// (`LogStoreOptions.encryption` for a `LogDataStore`). A value type; the default, ``none``,
/// writes the clear store format.
///
/// An app makes one from its 256-bit key with the `LogStoreEncryption` product:
///
///     import LogStoreEncryption
///     var options = LogStoreOptions()
///     options.encryption = try .aes256GCM(key: keyFromTheKeychain)
///
/// At open, the store checks the key against MANIFEST's key check before it changes anything:
/// an encrypted store opened without its key throws `.wrongKey`, and a key given for a store that
/// is not encrypted throws `.notEncrypted` (a key is never silently ignored).
///
/// A store created with a key seals everything it writes derived from the app's data: records
/// (keys, values, type names, dictionaries), index run files, CHECKPOINT, spill files and
/// backups (Docs/FileFormatEncryption.md lists what stays clear). The key is never written.
public struct StoreEncryption: Sendable {
    /// The cipher of the store's key, which everything the store writes is sealed with; nil: the
    /// store is not encrypted.
    public var cipher: (any StoreCipher)?
    /// Other keys that open may try when ``cipher`` does not match the store: the old key after a
    /// rekey that may have been interrupted (the store has exactly one of the two keys, never a
    /// mix). Never used to write.
    public var additionalCiphers: [any StoreCipher]

    /// Encryption with `cipher` (nil: none), trying `additionalCiphers` too at open.
    public init(cipher: (any StoreCipher)?, additionalCiphers: [any StoreCipher] = []) {
        self.cipher = cipher
        self.additionalCiphers = additionalCiphers
    }

    /// Not encrypted: the default.
    public static let none = StoreEncryption(cipher: nil)

    /// Whether the store writes with a key.
    public var isEnabled: Bool { cipher != nil }

    /// The cipher that opens a store whose MANIFEST names construction `storeCipher` (0: none) and
    /// holds `keyCheck`, or nil for a store that is not encrypted. Recovery calls this first,
    /// before it reads, removes, cuts or creates any other file. Throws `.wrongKey` when the store
    /// is encrypted and no key offered passes the key check (or none is offered), `.notEncrypted`
    /// when ``cipher`` is set for a store that is not encrypted, and the ciphers' own errors.
    package func select(storeCipher: UInt8, keyCheck: [UInt8], storeID: StoreID, path: String) throws -> (any StoreCipher)? {
        guard storeCipher != StoreCipherAlgorithm.none else {
            guard cipher == nil else {
                throw LogStoreError(
                    .notEncrypted,
                    "The store is not encrypted, but a key was given. Open it without a key; encrypting an existing store (a rekey) is not available in this build yet.",
                    path: path)
            }
            return nil
        }
        let offered = (cipher.map { [$0] } ?? []) + additionalCiphers
        guard !offered.isEmpty else {
            throw LogStoreError(.wrongKey, "The store is encrypted; open it with its key.", path: path)
        }
        // All zeros: the MANIFEST salvage rebuilt from the segment headers, whose key check was
        // lost with the old one. The first key of the store's construction is taken; replay then
        // checks it against every key epoch's MAC (a wrong key is damage there, never data).
        if keyCheck.allSatisfy({ $0 == 0 }), let candidate = offered.first(where: { $0.algorithmID == storeCipher }) {
            return candidate
        }
        for candidate in offered where candidate.algorithmID == storeCipher {
            if StoreCrypto.constantTimeEqual(try StoreCrypto.keyCheck(candidate, storeID: storeID), keyCheck) { return candidate }
        }
        throw LogStoreError(
            .wrongKey,
            offered.count == 1
                ? "The key given is not this store's key (MANIFEST's key check does not match). Nothing was changed."
                : "None of the \(offered.count) keys given is this store's key (MANIFEST's key check does not match). Nothing was changed.",
            path: path)
    }
}
