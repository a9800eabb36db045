import Foundation
import MetricsTestKit
import PinStore
import PinStoreDevServer
import PinStoreTestSupport
import Testing
import CPinStoreTestSupport

/// A collector that takes a report and never answers costs one delivery limit (15 s by default),
/// not the session's 60-second timeout, and never holds the reporter's queue longer.
@Suite struct PinFailureReportDeliveryLimitTests {
    /// A TCP port on 127.0.0.1 that completes connections (the kernel's backlog) and never
    /// reads or answers: a collector that hangs. Closed by `close()`.
    final class SilentListener: Sendable {
        let port: Int
        private let descriptor: Int32

        init() throws {
            var port: Int32 = 0
            let fd = CPinStoreTestSupport_silentListener(&port)
            try #require(fd >= 0)
            descriptor = fd
            self.port = Int(port)
        }

        func close() { CPinStoreTestSupport_close(descriptor) }
    }

    @Test func theURLSessionSenderGivesUpOnASilentCollectorAtItsLimit() async throws {
        let listener = try SilentListener()
        defer { listener.close() }
        let uri = try #require(URL(string: "http://127.0.0.1:\(listener.port)/pin-reports"))
        let error = await #expect(throws: PinFailureReportDeliveryError.self) {
            try await URLSessionReportSender().send(Data("{}".utf8), to: uri, timeout: 1)
        }
        // The sender's own 1 s limit ended it, not the session's 60 s default (which fails with
        // the transport's timeout instead). The cause, not a bound in seconds that a loaded
        // machine can miss.
        #expect(error?.description.contains("did not answer within 1.0 s") == true, "\(String(describing: error))")
    }

    @Test func aSenderThatNeverReturnsCountsAsAFailedDeliveryAtTheLimit() async throws {
        let directory = try TemporaryDirectory(); defer { directory.cleanUp() }
        let sender = RecordingReportSender(fails: false)
        sender.hold()   // holds every delivery until released, ignoring cancellation
        defer { sender.release() }
        let metrics = TestMetrics()
        var limits = PinFailureReporter.Limits()
        limits.timeout = 0.5
        let store = try PinFailureReportTests.store(directory, sender: sender, limits: limits, metrics: metrics)
        _ = PinFailureReportTests.evaluator(store).evaluateNow(host: "localhost", presentedChain: try PinFailureReportTests.chain("attacker-chain.pem"),
                                                               at: ChainValidatorTests.now)
        _ = try await pollUntil(every: .milliseconds(20)) { PinFailureReportTests.reportCount(metrics, "failed") > 0 }
        #expect(PinFailureReportTests.reportCount(metrics, "failed") == 1)
        #expect(PinFailureReportTests.reportCount(metrics, "sent") == 0)
    }
}
