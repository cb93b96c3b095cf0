import Foundation
import LogStore

// Model-based checking: seeded random scripts of writes, reads, child stores, merges with every
// policy, reopens and nukes, checked against a dictionary model after every step
// (``DataStoreModelChecker``). The same interpreter the fuzz target and the property tests drive.

extension DataStoreConformance {
    /// Random script bytes from `seed` (SplitMix64): `count` operations; with `childHeavy`, the
    /// first byte of each operation picks only writes, reads, child stores, merges and resets,
    /// and the others are small, so that children write the same few items and merges conflict.
    static func randomScript(seed: UInt64, count: Int, childHeavy: Bool) -> [StoreScriptOperation] {
        var state = seed
        func next() -> UInt8 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return UInt8(truncatingIfNeeded: z ^ (z >> 31))
        }
        let kinds: [UInt8] = [0, 1, 2, 5, 8, 8, 9, 10, 11, 12]
        return (0..<count).map { _ in
            var bytes: [UInt8] = []
            if childHeavy {
                bytes.append(kinds[Int(next()) % kinds.count])
                for _ in 0..<9 { bytes.append(next() % 12) }
            } else {
                for _ in 0..<10 { bytes.append(next()) }
            }
            var r = StoreScript.Reader(bytes)
            return StoreScript.parseOne(&r)
        }
    }

    static func runScripts(_ c: ConformanceContext, seeds: Range<UInt64>, count: Int, childHeavy: Bool) throws {
        for seed in seeds {
            let location = try c.makeLocation()
            let checker = try DataStoreModelChecker(location: location, capabilities: c.capabilities)
            defer { checker.finish() }
            do {
                try checker.run(randomScript(seed: seed, count: count, childHeavy: childHeavy))
            } catch let v as ModelViolation {
                c.fail("seed \(seed): \(v)")
                return
            }
        }
    }

    static var modelCases: [ConformanceCase] {
        [
            ConformanceCase(
                "model.randomScriptsMatchTheModel",
                "Every rule at once: seeded random writes, reads of every request shape, child stores, merges with each policy, reopens and nukes give the model's answers after every step.",
                requires: [.childStores]
            ) { c in
                try runScripts(c, seeds: 1..<25, count: 40, childHeavy: false)
            },
            ConformanceCase(
                "model.randomChildTreesMatchTheModel",
                "Child Stores at once: seeded random trees of children and grandchildren writing the same few items and merging with each policy give the model's answers.",
                requires: [.childStores]
            ) { c in
                try runScripts(c, seeds: 100..<125, count: 40, childHeavy: true)
            },
        ]
    }
}
