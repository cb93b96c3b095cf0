/// Human-readable numbers for text output.
package enum Format {
    /// `1.5 MiB`, `312 B`.
    package static func bytes(_ n: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(n)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(n) B" : "\(fixed(value, 1)) \(units[unit])"
    }

    /// Signed byte amount: `-1.5 MiB`.
    package static func signedBytes(_ n: Int64) -> String {
        n < 0 ? "-" + bytes(n.magnitude) : bytes(UInt64(n))
    }

    /// `1,234,567`.
    package static func count<I: BinaryInteger>(_ n: I) -> String {
        let digits = String(n.magnitude)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return (n < 0 ? "-" : "") + out
    }

    /// `value` with `places` decimals (no Foundation formatting, so output is locale-independent).
    package static func fixed(_ value: Double, _ places: Int) -> String {
        guard value.isFinite else { return "\(value)" }
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        let whole = Int64(scaled / scale)
        var frac = String(Int64(scaled) - whole * Int64(scale))
        while frac.count < places { frac = "0" + frac }
        return (value < 0 && scaled != 0 ? "-" : "") + String(whole) + (places > 0 ? "." + frac : "")
    }

    /// `42.0%` of `part / whole` (0% when whole is 0).
    package static func percent(_ part: UInt64, of whole: UInt64) -> String {
        whole == 0 ? "0.0%" : fixed(Double(part) * 100 / Double(whole), 1) + "%"
    }

    /// Pads `s` on the right to `width` characters.
    package static func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : s + String(repeating: " ", count: width - s.count)
    }

    /// Pads `s` on the left to `width` characters.
    package static func padLeft(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : String(repeating: " ", count: width - s.count) + s
    }
}
