/// Fixed-point text for a number, without a trailing `.0` unless `fixed`: stable across platforms.
package func fmt(_ value: Double, digits: Int = 1, fixed: Bool = false) -> String {
    guard value.isFinite else { return value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf") }
    var factor: Double = 1
    for _ in 0..<digits { factor *= 10 }
    let scaled = (value.magnitude * factor).rounded()
    guard scaled < 9.0e18 else { return String(value) }
    let whole = UInt64(scaled) / UInt64(factor)
    var fraction = UInt64(scaled) % UInt64(factor)
    let sign = value < 0 && scaled > 0 ? "-" : ""
    var width = digits
    if !fixed {
        if fraction == 0 { return sign + String(whole) }
        while fraction % 10 == 0 {
            fraction /= 10
            width -= 1
        }
    }
    guard width > 0 else { return sign + String(whole) }
    var text = String(fraction)
    while text.count < width { text = "0" + text }
    return sign + String(whole) + "." + text
}
