/// Keeps the `k` smallest elements seen under `areInIncreasingOrder` (a bounded max-heap), so a
/// request with a limit sorts in O(n log k) time and O(k) memory instead of sorting everything.
///
/// `areInIncreasingOrder` must be a strict weak order (the executor's comparisons are total:
/// ``NumberOrder`` for numbers, ties broken by key); otherwise the kept elements need not be the
/// first `k` of a full sort.
struct TopK<Element> {
    let k: Int
    let less: (Element, Element) throws -> Bool
    private(set) var heap: [Element] = []

    init(k: Int, by less: @escaping (Element, Element) throws -> Bool) {
        self.k = k
        self.less = less
        heap.reserveCapacity(min(k, 1 << 16))
    }

    mutating func insert(_ e: Element) throws {
        guard k > 0 else { return }
        if heap.count < k {
            heap.append(e)
            try siftUp(heap.count - 1)
        } else if try less(e, heap[0]) {
            heap[0] = e
            try siftDown(0)
        }
    }

    /// The kept elements in increasing order.
    func sorted() throws -> [Element] { try heap.sorted(by: less) }

    private mutating func siftUp(_ i: Int) throws {
        var i = i
        while i > 0 {
            let parent = (i - 1) / 2
            guard try less(heap[parent], heap[i]) else { return }
            heap.swapAt(parent, i)
            i = parent
        }
    }

    private mutating func siftDown(_ i: Int) throws {
        var i = i
        while true {
            let l = 2 * i + 1
            let r = l + 1
            var largest = i
            if l < heap.count, try less(heap[largest], heap[l]) { largest = l }
            if r < heap.count, try less(heap[largest], heap[r]) { largest = r }
            if largest == i { return }
            heap.swapAt(i, largest)
            i = largest
        }
    }
}
