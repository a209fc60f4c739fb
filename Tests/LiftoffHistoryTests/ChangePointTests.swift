import Foundation
import Testing

@testable import LiftoffHistory

@Suite("Change points")
struct ChangePointTests {
    @Test("every series' change points, means and p-values are Apache Otava's", arguments: ChangePointVectors.cases.indices)
    func agreesWithOtava(_ index: Int) {
        let vector = ChangePointVectors.cases[index]
        let options = ChangePointOptions(windowLength: vector.windowLength, maxPValue: vector.maxPValue, minMagnitude: vector.minMagnitude)
        let found = ChangePoints.find(in: vector.series, options: options)
        #expect(found.map(\.index) == vector.expected.map(\.index), "\(vector.name)")
        for (point, expected) in zip(found, vector.expected) {
            #expect(abs(point.meanBefore - expected.meanBefore) <= 1e-9 * max(1, abs(expected.meanBefore)), "\(vector.name)")
            #expect(abs(point.meanAfter - expected.meanAfter) <= 1e-9 * max(1, abs(expected.meanAfter)), "\(vector.name)")
            // p-values down to 1e-300: compared relatively, by their logarithms where tiny.
            if expected.pValue > 1e-12 {
                #expect(abs(point.pValue - expected.pValue) <= 1e-9 * expected.pValue + 1e-15, "\(vector.name): \(point.pValue) against \(expected.pValue)")
            } else if expected.pValue > 0 {
                #expect(abs(log(point.pValue) - log(expected.pValue)) <= 1e-6, "\(vector.name): \(point.pValue) against \(expected.pValue)")
            }
        }
    }

    @Test("Student's t survival function: known quantiles")
    func studentT() {
        // t = 2.228 with 10 degrees of freedom is the two-sided 5 % point; t = 1.96 with many is the normal's.
        #expect(abs(2 * StudentT.survival(2.228138851986, degrees: 10) - 0.05) < 1e-9)
        #expect(abs(2 * StudentT.survival(1.959963984540, degrees: 1e7) - 0.05) < 1e-6)
        #expect(abs(StudentT.survival(0, degrees: 3) - 0.5) < 1e-15)
        #expect(abs(StudentT.survival(1, degrees: 1) - 0.25) < 1e-12, "Cauchy: P(T > 1) = 1/4")
    }
}
