import Dispatch
import Foundation
import Liftoff
import LiftoffSampler
import Synchronization

/// The bundled demo's launch work: plain Swift with call chains a person recognises in a
/// flame graph. It parses the bundled catalogue (`catalog.json`), builds a search tree and a
/// category index from it, and hashes every item, part of it on two worker queues.
public enum DemoWorkload {
    /// One catalogue entry.
    public struct Item: Codable, Sendable {
        /// Identifier.
        public var id: Int
        /// Stock-keeping unit, `LO-00001`.
        public var sku: String
        /// Display name.
        public var name: String
        /// Category name.
        public var category: String
        /// Price in currency units.
        public var price: Double
        /// Rating from 1 to 5.
        public var rating: Double
        /// Search tags.
        public var tags: [String]
        /// Long description.
        public var description: String
    }

    /// What a run produced, so the work cannot be optimized away and tests can check it.
    public struct Result: Sendable, Equatable {
        /// Items parsed per round.
        public var items: Int
        /// Height of the search tree.
        public var treeHeight: Int
        /// Categories in the index.
        public var categories: Int
        /// Combined digest of all items.
        public var digest: UInt64
    }

    /// Runs the launch work.
    /// - Parameters:
    ///   - rounds: how many times the catalogue is parsed, indexed and hashed.
    ///   - workers: queues the hashing is shared with; each registers its thread for sampling.
    public static func run(rounds: Int = 3, workers: Int = 2) throws -> Result {
        var result = Result(items: 0, treeHeight: 0, categories: 0, digest: 0)
        let data = try readCatalogFile()
        for _ in 0..<max(rounds, 1) {
            let items = try decodeCatalog(data)
            let tree = buildSearchTree(items)
            let index = buildCategoryIndex(items)
            let digest = hashCatalog(items, workers: workers)
            result = Result(items: items.count, treeHeight: tree.height, categories: index.count, digest: digest)
        }
        return result
    }

    /// Reads the bundled `catalog.json`.
    /// - Throws: when the resource is missing.
    @inline(never)
    public static func readCatalogFile() throws -> Data {
        ThreadRules.noteBlocking("read catalog.json")
        guard let url = DemoResources.url(forResource: "catalog", withExtension: "json") else {
            throw CocoaError(.fileNoSuchFile)
        }
        return try Data(contentsOf: url)
    }

    /// Busy CPU work for `nanoseconds`, to simulate a slower build of the app. The work is
    /// arithmetic in this function itself, so profiles charge its time to it.
    @inline(never)
    static func extraWork(nanoseconds: UInt64) {
        let end = DispatchTime.now().uptimeNanoseconds + nanoseconds
        var value = nanoseconds | 1
        while DispatchTime.now().uptimeNanoseconds < end {
            for _ in 0..<4_096 { value = value &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
        }
        digestSink.store(value, ordering: .relaxed)
    }

    /// Blocks the calling thread, busy, for `milliseconds`: a hang to find.
    @inline(never)
    static func stall(milliseconds: UInt64) {
        let end = DispatchTime.now().uptimeNanoseconds + milliseconds * 1_000_000
        var state = StretchedHash(seed: 7)
        while DispatchTime.now().uptimeNanoseconds < end { state.absorb("stall") }
        digestSink.store(state.value, ordering: .relaxed)
    }

    @inline(never)
    static func decodeCatalog(_ data: Data) throws -> [Item] {
        struct Catalog: Codable {
            var version: Int
            var items: [Item]
        }
        return try JSONDecoder().decode(Catalog.self, from: data).items
    }

    @inline(never)
    static func buildSearchTree(_ items: [Item]) -> SearchTree {
        var tree = SearchTree()
        for item in items {
            tree.insert(key: item.name + "#" + item.sku, value: item.id)
        }
        return tree
    }

    @inline(never)
    static func buildCategoryIndex(_ items: [Item]) -> [String: [Int]] {
        var index: [String: [Int]] = [:]
        for item in items {
            index[item.category, default: []].append(item.id)
            for tag in item.tags { index["#" + tag, default: []].append(item.id) }
        }
        for key in index.keys { index[key]?.sort() }
        return index
    }

    @inline(never)
    static func hashCatalog(_ items: [Item], workers: Int) -> UInt64 {
        guard workers > 0 else { return hashItems(items[...]) }
        let parts = workers + 1
        let chunk = (items.count + parts - 1) / parts
        let digests = DigestBox(count: parts)
        let group = DispatchGroup()
        for part in 1..<parts {
            let slice = items[min(part * chunk, items.count)..<min((part + 1) * chunk, items.count)]
            DemoQueues.queue(part - 1).async(group: group) {
                Sampler.withCurrentThreadRegistered(name: "hash-worker-\(part)") {
                    digests.set(part, hashItems(slice))
                }
            }
        }
        digests.set(0, hashItems(items[0..<min(chunk, items.count)]))
        group.wait()
        return digests.combined()
    }

    @inline(never)
    static func hashItems(_ items: ArraySlice<Item>) -> UInt64 {
        var digest: UInt64 = 0
        for item in items {
            digest = digest &* 31 &+ itemDigest(item)
        }
        return digest
    }

    @inline(never)
    static func itemDigest(_ item: Item) -> UInt64 {
        var state = StretchedHash(seed: UInt64(item.id))
        for _ in 0..<15 {
            state.absorb(item.name)
            state.absorb(item.description)
            for tag in item.tags { state.absorb(tag) }
        }
        return state.value
    }
}

/// Keeps the result of extra work alive.
let digestSink = Atomic<UInt64>(0)

/// Serial queues for the demo's workers: each gets its own thread from the pool.
enum DemoQueues {
    static let queues = (0..<8).map { DispatchQueue(label: "liftoff.demo.worker-\($0)") }
    static func queue(_ index: Int) -> DispatchQueue { queues[index % queues.count] }
}

/// Per-part digests written by worker queues.
final class DigestBox: Sendable {
    private let values: Mutex<[UInt64]>
    init(count: Int) { values = Mutex([UInt64](repeating: 0, count: count)) }
    func set(_ index: Int, _ value: UInt64) { values.withLock { $0[index] = value } }
    func combined() -> UInt64 { values.withLock { $0.reduce(0) { $0 &* 1_000_003 &+ $1 } } }
}

/// A deliberately costly string hash (FNV-1a over UTF-8, mixed per byte).
struct StretchedHash {
    private(set) var value: UInt64

    init(seed: UInt64) { value = 0xcbf2_9ce4_8422_2325 ^ seed }

    @inline(never)
    mutating func absorb(_ text: String) {
        for byte in text.utf8 {
            value ^= UInt64(byte)
            value = value &* 0x100_0000_01b3
            value ^= value >> 29
        }
    }
}

/// An unbalanced binary search tree, as naive launch code often builds.
struct SearchTree {
    private final class Node {
        let key: String
        let value: Int
        var left: Node?
        var right: Node?
        init(key: String, value: Int) {
            self.key = key
            self.value = value
        }
    }

    private var root: Node?

    @inline(never)
    mutating func insert(key: String, value: Int) {
        guard let root else {
            root = Node(key: key, value: value)
            return
        }
        var current = root
        while true {
            if key < current.key {
                guard let left = current.left else { current.left = Node(key: key, value: value); return }
                current = left
            } else {
                guard let right = current.right else { current.right = Node(key: key, value: value); return }
                current = right
            }
        }
    }

    var height: Int {
        func depth(_ node: Node?) -> Int { node.map { 1 + max(depth($0.left), depth($0.right)) } ?? 0 }
        return depth(root)
    }
}
