// The engine's encryption seam, so that `import LogStoreEncryption` is all an app (or another
// cipher's implementation) needs next to `import LogStore`.
@_exported public import protocol LogStoreEngine.AEADKey
@_exported public import struct LogStoreEngine.AEADNonce
@_exported public import protocol LogStoreEngine.StoreCipher
@_exported public import enum LogStoreEngine.StoreCipherAlgorithm
@_exported public import struct LogStoreEngine.StoreEncryption
