import Foundation
import Hummingbird
import Tracing

/// A product the server lists.
public struct Product: Codable, Sendable, ResponseEncodable {
    public var id: Int
    public var name: String
    public var price: Double
}

/// The server's startup, each step a tracing span, as a server that already uses tracing has.
/// No step knows about Liftoff.
public enum Startup {
    /// Builds the catalogue the server serves: CPU work.
    public static func loadCatalogue(count: Int = 20_000) -> [Product] {
        withSpan("load catalogue") { span in
            let products = (0..<count).map { index in
                Product(id: index, name: "Product \(String(index * 7919 % 104_729, radix: 36))", price: Double(index % 500) / 4)
            }
            span.attributes["catalogue.count"] = products.count
            return products.sorted { $0.name < $1.name }
        }
    }

    /// Builds the router: its routes, and an index by id that takes `extraMilliseconds` longer
    /// (to try `liftoff compare` on a slowed span).
    public static func buildRouter(
        catalogue: [Product], extraMilliseconds: Int = 0
    ) -> Router<BasicRequestContext> {
        withSpan("build router") { span in
            let index = Dictionary(uniqueKeysWithValues: catalogue.map { ($0.id, $0) })
            if extraMilliseconds > 0 { spin(milliseconds: extraMilliseconds) }
            let router = Router()
            router.add(middleware: TracingMiddleware())
            router.get("/health") { _, _ in "ok" }
            // Answers with the CPU time its child tasks used, in nanoseconds.
            router.get("/report") { _, _ -> String in String(await priceReport()) }
            router.get("/products/:id") { _, context -> Product in
                let id = try context.parameters.require("id", as: Int.self)
                guard let product = index[id] else { throw HTTPError(.notFound) }
                return product
            }
            span.attributes["router.routes"] = 3
            return router
        }
    }

    /// Prices the catalogue for a report in parallel: a summary in an `async let` and two shards
    /// in a task group, each a child task of the request. Returns the CPU time they used, in
    /// nanoseconds, as each measured it on its own thread.
    public static func priceReport() async -> UInt64 {
        async let summary = spinCPU(milliseconds: 20)
        let shards = await withTaskGroup(of: UInt64.self) { group in
            for _ in 0..<2 { group.addTask { spinCPU(milliseconds: 15) } }
            return await group.reduce(0, +)
        }
        return await summary + shards
    }

    /// Burns about `milliseconds` of the calling thread's CPU time; returns the CPU time it used.
    @inline(never)
    public static func spinCPU(milliseconds: Int) -> UInt64 {
        func cpuNs() -> UInt64 {
            var now = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
            return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
        }
        let start = cpuNs()
        var hash: UInt64 = 14_695_981_039_346_656_037
        while cpuNs() - start < UInt64(milliseconds) * 1_000_000 {
            for byte in 0..<UInt64(512) { hash = (hash ^ byte) &* 1_099_511_628_211 }
        }
        if hash == 42 { print("") }
        return cpuNs() - start
    }

    /// Burns CPU for about `milliseconds`.
    @inline(never)
    public static func spin(milliseconds: Int) {
        let end = Date().addingTimeInterval(Double(milliseconds) / 1000)
        var hash: UInt64 = 14_695_981_039_346_656_037
        while Date() < end {
            for byte in 0..<UInt64(512) { hash = (hash ^ byte) &* 1_099_511_628_211 }
        }
        if hash == 42 { print("") }
    }
}
