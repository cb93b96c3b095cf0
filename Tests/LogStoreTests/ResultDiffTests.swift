import PropertyBased
import Testing

@testable import LogStore

/// `ResultDiff` (observation's differences from the changed entries only): random sorted results,
/// random changes (deletes, inserts, value changes that move items), and the difference built from
/// the changed entries must turn the old ids into the new ones, keeping in place every id whose
/// position among the unchanged ones allows it.
@Suite struct ResultDiffTests {
    /// (id, value) pairs sorted by value then id: the order observed results have.
    static func sorted(_ values: [Int: Int]) -> [Int] {
        values.keys.sorted { (values[$0]!, $0) < (values[$1]!, $1) }
    }

    @Test(.shrinking)
    func differencesFromChangedEntriesTransformOldIntoNew() async {
        let change = zip(Gen<Int>.int(in: 0...2), Gen<Int>.int(in: 0...40), Gen<Int>.int(in: 0...20))
        await propertyCheck(count: 500, input: Gen<Int>.int(in: 0...20).array(of: 0...30), change.array(of: 0...8)) { initial, changes in
            var old: [Int: Int] = [:]
            for (i, v) in initial.enumerated() { old[i] = v }
            var new = old
            for (kind, id, value) in changes {
                switch kind {
                case 0: new[id] = nil
                default: new[id] = value
                }
            }
            let changed = Set(new.keys.filter { old[$0] != nil && old[$0] != new[$0] })
            let before = Self.sorted(old)
            let after = Self.sorted(new)
            let diff = try #require(ResultDiff.make(from: before, to: after, changed: changed))
            #expect(before.applying(diff) == after, "\(before) -> \(after) changed \(changed): \(diff)")
            // An id that did not change stays (never removed and inserted).
            let touched = Set(diff.removals.map { if case .remove(_, let e, _) = $0 { return e } else { return -1 } })
            #expect(touched.isSubset(of: changed.union(Set(before).subtracting(after))))
        }
    }

    @Test func twoItemsSwappingPlacesBetweenTheSameNeighboursMoveOnlyOne() throws {
        let before = [1, 2, 3, 4]
        let after = [1, 3, 2, 4]
        let diff = try #require(ResultDiff.make(from: before, to: after, changed: [2, 3]))
        #expect(before.applying(diff) == after)
        #expect(diff.removals.count == 1 && diff.insertions.count == 1)
    }

    @Test func anItemUpdatedInPlaceIsNoChangeOfIds() throws {
        let diff = try #require(ResultDiff.make(from: [1, 2, 3], to: [1, 2, 3], changed: [2]))
        #expect(diff.isEmpty)
    }

    @Test func longestIncreasingSubsequence() {
        #expect(ResultDiff.longestIncreasing([3, 1, 2, 5, 4]).map { [3, 1, 2, 5, 4][$0] } == [1, 2, 4])
        #expect(ResultDiff.longestIncreasing([]).isEmpty)
        #expect(ResultDiff.longestIncreasing([7]) == [0])
    }
}
