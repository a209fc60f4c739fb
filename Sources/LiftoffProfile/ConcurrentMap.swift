import Dispatch
import Synchronization

extension RandomAccessCollection where Index == Int {
    /// `map`, with the elements transformed on every core; the results keep the elements' order.
    package func concurrentMap<T: Sendable>(_ transform: @Sendable (Element) -> T) -> [T] where Self: Sendable {
        guard count > 1 else { return map(transform) }
        let results = Mutex([T?](repeating: nil, count: count))
        DispatchQueue.concurrentPerform(iterations: count) { offset in
            let result = transform(self[startIndex + offset])
            results.withLock { $0[offset] = result }
        }
        return results.withLock { $0 }.map { $0! }
    }
}
