/// Measures a baseline and a treatment once each, baseline first in even rounds and second in
/// odd ones. Pairs whose order alternates cancel the drift that separate runs on a shared machine
/// suffer; every paired benchmark takes its ratio from one pair.
/// - Returns: the baseline's and the treatment's measurements.
public func inAlternatingOrder<Value>(
    round: Int, baseline: () throws -> Value, treatment: () throws -> Value
) rethrows -> (baseline: Value, treatment: Value) {
    if round.isMultiple(of: 2) {
        let base = try baseline()
        return (base, try treatment())
    }
    let treated = try treatment()
    return (try baseline(), treated)
}
