internal import CCRC32C

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of every frame, segment
/// header, manifest and checkpoint. The CPU's CRC-32C instruction where there is one (SSE4.2 on
/// x86-64, the CRC32 extension on arm64: about 8 bytes per 3 cycles, 5 to 10 times the software
/// loop); elsewhere a slicing-by-8 software implementation. Both give the same values (tested).
///
/// Stored checksums are *masked* as in LevelDB (`rotate right 15, plus 0xa282ead8`) so that a
/// checksum computed over bytes that themselves contain checksums stays well distributed.
public enum CRC32C {
    static let tables: [[UInt32]] = {
        var t = [[UInt32]](repeating: [UInt32](repeating: 0, count: 256), count: 8)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
            t[0][i] = c
        }
        for i in 0..<256 {
            for k in 1..<8 { t[k][i] = (t[k - 1][i] >> 8) ^ t[0][Int(t[k - 1][i] & 0xFF)] }
        }
        return t
    }()
    static let flat: [UInt32] = tables.flatMap { $0 }

    /// Extends `crc` (the unmasked CRC of earlier bytes, 0 to start) with `bytes`.
    /// Pure function; runs on the caller's thread.
    public static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        if hardware, let base = bytes.baseAddress { return ~logstore_crc32c_hw_update(~crc, base, bytes.count) }
        return softwareUpdate(crc, bytes)
    }

    /// Whether the CPU computes CRC-32C (checked once).
    static let hardware = logstore_crc32c_hw_available() != 0

    /// ``update(_:_:)`` in software (the reference the hardware path is tested against).
    static func softwareUpdate(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var c = ~crc
        flat.withUnsafeBufferPointer { t in
            var i = 0
            let n = bytes.count
            while n - i >= 8 {
                let lo = bytes.loadUnaligned(fromByteOffset: i, as: UInt32.self).littleEndian ^ c
                let hi = bytes.loadUnaligned(fromByteOffset: i + 4, as: UInt32.self).littleEndian
                c =
                    t[7 * 256 + Int(lo & 0xFF)] ^ t[6 * 256 + Int((lo >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((lo >> 16) & 0xFF)] ^ t[4 * 256 + Int(lo >> 24)]
                    ^ t[3 * 256 + Int(hi & 0xFF)] ^ t[2 * 256 + Int((hi >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((hi >> 16) & 0xFF)] ^ t[0 * 256 + Int(hi >> 24)]
                i += 8
            }
            while i < n {
                c = t[Int((c ^ UInt32(bytes[i])) & 0xFF)] ^ (c >> 8)
                i += 1
            }
        }
        return ~c
    }

    /// The CRC-32C of `bytes`.
    public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 { update(0, bytes) }

    /// The CRC-32C of `bytes`.
    public static func checksum(_ bytes: [UInt8]) -> UInt32 { bytes.withUnsafeBytes { update(0, $0) } }

    static let maskDelta: UInt32 = 0xA282_EAD8

    /// LevelDB's mask: the form in which a CRC is stored on disk.
    public static func mask(_ crc: UInt32) -> UInt32 { ((crc >> 15) | (crc << 17)) &+ maskDelta }

    /// Inverse of `mask(_:)`.
    public static func unmask(_ masked: UInt32) -> UInt32 {
        let rot = masked &- maskDelta
        return (rot >> 17) | (rot << 15)
    }
}
