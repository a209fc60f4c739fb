/// SplitMix64 (Steele, Lea & Flood 2014): a tiny, fast generator whose output depends only
/// on its seed, on every platform and Swift version.
package struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    package init(seed: UInt64) {
        state = seed
    }

    /// The next 64 random bits.
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform double in `0..<1` with 53 random bits.
    package mutating func nextUnit() -> Double {
        Double(next() >> 11) * 0x1p-53
    }

    /// A uniform integer in `0..<bound` (`bound` > 0), without modulo bias.
    ///
    /// Lemire's multiply-and-shift with rejection. Written out rather than using
    /// `Int.random(in:using:)`, whose algorithm the standard library does not promise to keep.
    package mutating func nextIndex(below bound: Int) -> Int {
        let range = UInt64(bound)
        var product = next().multipliedFullWidth(by: range)
        if product.low < range {
            let threshold = (0 &- range) % range
            while product.low < threshold { product = next().multipliedFullWidth(by: range) }
        }
        return Int(product.high)
    }

    /// Fills `draw` with `source.count` values picked from `source` with replacement.
    package mutating func resample(_ source: [Double], into draw: inout [Double]) {
        for index in draw.indices { draw[index] = source[nextIndex(below: source.count)] }
    }
}
