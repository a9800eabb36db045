import Foundation

/// A tiny measuring harness: every figure is the median of several samples, each timing many
/// operations, and every target is reported as a ratio to a baseline measured in the same run.
enum Harness {
    /// Median nanoseconds per operation of `body`, which performs `operations` operations.
    static func nanosecondsPerOperation(operations: Int, samples: Int = 15, _ body: () -> Void) -> Double {
        body() // warm up caches and lazy state
        var perOperation: [Double] = []
        let clock = ContinuousClock()
        for _ in 0..<samples {
            let elapsed = clock.measure(body)
            let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
            perOperation.append(nanoseconds / Double(operations))
        }
        perOperation.sort()
        return perOperation[perOperation.count / 2]
    }

    /// Prevents the optimizer from discarding a result.
    @inline(never)
    static func consume<T>(_ value: T) {
        withExtendedLifetime(value) {}
    }

    static func format(_ nanoseconds: Double) -> String {
        switch nanoseconds {
        case ..<1_000: String(format: "%.0f ns", nanoseconds)
        case ..<1_000_000: String(format: "%.1f µs", nanoseconds / 1_000)
        default: String(format: "%.2f ms", nanoseconds / 1_000_000)
        }
    }
}

/// A result row.
struct Row {
    let name: String
    let value: String
    let baseline: String
    let ratio: String
    let target: String
    let met: Bool?
}

func printTable(_ rows: [Row]) {
    let headers = ["benchmark", "PinStore", "baseline (same run)", "ratio", "target", "met"]
    let cells = rows.map { [$0.name, $0.value, $0.baseline, $0.ratio, $0.target, $0.met.map { $0 ? "yes" : "NO" } ?? "-"] }
    let widths = headers.indices.map { column in ([headers[column]] + cells.map { $0[column] }).map(\.count).max() ?? 0 }
    func line(_ values: [String]) -> String {
        "| " + values.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }.joined(separator: " | ") + " |"
    }
    print(line(headers))
    print("|" + widths.map { String(repeating: "-", count: $0 + 2) }.joined(separator: "|") + "|")
    for row in cells { print(line(row)) }
}
