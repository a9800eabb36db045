import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// This process's memory and CPU figures, for the long measuring variants (Linux; zeros elsewhere).
package enum ProcessFigures {
    /// VmRSS now, in bytes.
    package static func residentBytes() -> Int { status("VmRSS") }

    /// VmHWM, the peak resident size so far, in bytes.
    package static func peakResidentBytes() -> Int { status("VmHWM") }

    /// User and system CPU seconds so far.
    package static func cpuSeconds() -> Double {
        #if canImport(Glibc)
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        #else
        return 0
        #endif
    }

    private static func status(_ field: String) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
              let kib = Int(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
        return kib * 1024
    }

    /// The line the measuring script reads.
    package static func report(path: String, parallel: Int, elapsed: Duration, baseline: Int, cpuBefore: Double) -> String {
        let peak = peakResidentBytes()
        return "hostile-figures url=\(path) parallel=\(parallel) elapsed=\(elapsed) baselineMiB=\(baseline >> 20) "
            + "peakMiB=\(peak >> 20) growthMiB=\((peak - baseline) >> 20) cpuSeconds=\(String(format: "%.2f", cpuSeconds() - cpuBefore))"
    }
}
