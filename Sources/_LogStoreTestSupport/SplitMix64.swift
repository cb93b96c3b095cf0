/// A small, fast, seeded pseudo-random generator (SplitMix64, Steele/Lea/Flood 2014).
///
/// Crash tests draw every random decision from one of these so that a run is reproducible
/// from its seed alone. Not cryptographic. A value type: copy it to fork a stream.
/// Use it from one thread at a time (it is a plain struct; copies are independent).
public struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The generator's internal state; the next output is a function of it.
    public private(set) var state: UInt64

    /// Creates a generator whose outputs are determined by `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// The next 64 random bits. Never fails.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniformly distributed integer in `range` (which must not be empty).
    public mutating func int(in range: Range<Int>) -> Int {
        Int.random(in: range, using: &self)
    }

    /// A uniformly distributed integer in `range`.
    public mutating func int(in range: ClosedRange<Int>) -> Int {
        Int.random(in: range, using: &self)
    }

    /// True with probability `probability` (clamped to 0...1).
    public mutating func chance(_ probability: Double) -> Bool {
        Double.random(in: 0..<1, using: &self) < probability
    }

    /// `count` random bytes.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(count)
        while out.count < count {
            var word = next()
            for _ in 0..<min(8, count - out.count) {
                out.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        return out
    }
}
