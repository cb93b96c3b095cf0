/// A store's identity: 16 random bytes chosen when the store is created (or upgraded to format
/// version 2), written into MANIFEST, every segment header and CHECKPOINT, so that a file from
/// another store is recognised as such instead of being read as this store's data.
package struct StoreID: Hashable, Sendable, CustomStringConvertible {
    package var bytes: [UInt8]

    package init(bytes: [UInt8]) { self.bytes = bytes }

    /// A new random id (the system's random number generator).
    package static func random() -> StoreID {
        var g = SystemRandomNumberGenerator()
        return StoreID(bytes: (0..<16).map { _ in UInt8.random(in: 0...255, using: &g) })
    }

    /// 32 hex digits.
    package var description: String {
        bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}
