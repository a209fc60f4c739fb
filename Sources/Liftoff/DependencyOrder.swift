/// The order a plan's tasks can run in: each after its dependencies, ties in plan order, found
/// with a binary min-heap in O(n log n).
enum DependencyOrder {
    /// Task indices in dependency order, ties in plan order; `names` maps a task name to its index.
    static func of(_ tasks: [LaunchTask], _ names: [String: Int]) -> [Int] {
        var remaining = tasks.map { $0.dependencies.filter { names[$0] != nil }.count }
        var dependents = [[Int]](repeating: [], count: tasks.count)
        for (index, task) in tasks.enumerated() {
            for dependency in task.dependencies { if let parent = names[dependency] { dependents[parent].append(index) } }
        }
        // A binary min-heap of ready indices: dependency order, ties in plan order, in O(n log n).
        var heap: [Int] = []
        func push(_ value: Int) {
            heap.append(value)
            var child = heap.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard heap[parent] > heap[child] else { break }
                heap.swapAt(parent, child)
                child = parent
            }
        }
        func pop() -> Int {
            let top = heap[0]
            let last = heap.removeLast()
            if !heap.isEmpty {
                heap[0] = last
                var parent = 0
                while true {
                    let left = 2 * parent + 1
                    let right = left + 1
                    var smallest = parent
                    if left < heap.count, heap[left] < heap[smallest] { smallest = left }
                    if right < heap.count, heap[right] < heap[smallest] { smallest = right }
                    if smallest == parent { break }
                    heap.swapAt(parent, smallest)
                    parent = smallest
                }
            }
            return top
        }
        for index in tasks.indices where remaining[index] == 0 { push(index) }
        var order: [Int] = []
        order.reserveCapacity(tasks.count)
        while !heap.isEmpty {
            let next = pop()
            order.append(next)
            for child in dependents[next] {
                remaining[child] -= 1
                if remaining[child] == 0 { push(child) }
            }
        }
        return order
    }
}
